"""What each kind of child runs once the server has forked it (or, for the candidate
child in spawn mode, once a fresh interpreter has started): the entry points of the
candidate child, the reference worker, the judge and the checker. The server owns what
a child cannot report itself (signals, timeouts, the log tail, wall time)."""

import faulthandler
import json
import os
import sys
import traceback

from . import checker, isolation, protocol
from .reporter import Channel


def enter_candidate_sandbox(workdir, device, hidden_paths, network):
    """THE hook where a candidate child leaves the trusted side: called first thing in
    every candidate child (the fork-mode standby included, before it initialises the
    device), while the process is still single-threaded, so namespaces can be entered.
    Everything the child needs afterwards is in `workdir` (the task's source and the
    job arrive on its command pipe; its outputs go into `workdir`); `hidden_paths` are
    the server's private places (the reference store, other children's directories)
    the candidate must not see; `network`: the request asked for the network (only a
    child forked for that request, never the standby). The sandbox module
    (kforge_harness/sandbox.py, issue 9) goes here; until then the child only leaves the
    network. Returns flags to report with every verdict of this child (e.g.
    network_not_isolated)."""
    del workdir, device, hidden_paths  # used by the sandbox
    if network or isolation.isolate_network():
        return []
    return ["network_not_isolated"]


def _child_limits(limits, device):
    """The request's limits as this child applies them: on the CPU the device is the
    host, so the share of memory the client admitted the job with bounds it too."""
    limits = dict(limits)
    admitted = limits.get("device_memory_mb")
    if admitted and not device.is_accelerator:
        limits["memory_mb"] = min(int(limits["memory_mb"]), int(admitted))
    return limits


def candidate_main(command_fd, result_fd, device, workdir, memory_base, hidden_paths,
                   network=False):
    """A candidate child: sandbox, device warm-up (ahead of its job when it is the
    fork-mode standby), then the job (the first line on the command pipe)."""
    flags = enter_candidate_sandbox(workdir, device, hidden_paths, network)
    channel = Channel(result_fd, command_fd)
    try:
        from .runner import warm_up
        warm_up(device)
    except Exception:  # noqa: BLE001 - the job's own device setup reports it properly
        traceback.print_exc()
    command = channel.command()
    if command is None:  # the server is done with this standby
        return
    try:
        with open(os.path.join(workdir, "job.json"), encoding="utf-8") as handle:
            job = json.load(handle)
        limits = _child_limits(job["limits"], device)
        # The network was left (or kept, for a request that asked for it) already.
        isolation.apply_limits(dict(limits, network=True), device, memory_base, True)
        # On SIGSEGV/SIGABRT, the Python stack goes to the log: the server reports the
        # signal, the log tail shows which line of the candidate was running.
        faulthandler.enable()
        os.chdir(workdir)
        # load_inline (CUDA candidates) builds under one directory per module name,
        # shared by every process by default: two candidates naming their module alike
        # would build over each other, and the lock file of a build killed at its timeout
        # would stall the next. Each child builds in its own directory, removed with it.
        os.environ["TORCH_EXTENSIONS_DIR"] = os.path.join(workdir, "torch_extensions")
        from .runner import limit_device_memory
        limit_device_memory(device, job["limits"].get("device_memory_mb"))
    except BaseException as exc:  # noqa: BLE001 - nothing of the candidate has run yet
        traceback.print_exc()
        channel.send({"harness_failed": f"setting up the child failed: {type(exc).__name__}: {exc}"})
        return
    channel.send({"harness_flags": flags})
    from . import candidate
    candidate.run(job, device, workdir, channel)


def _answer(result_fd, who, compute):
    """Runs a trusted child's `compute` and sends its result: a Verdict as such, anything
    else raised as the harness's own failure."""
    try:
        result = compute()
    except protocol.Verdict as verdict:
        result = protocol.verdict_result(verdict)
    except BaseException as exc:  # noqa: BLE001 - a harness bug must still answer
        traceback.print_exc()
        result = {"status": "error", "error_class": protocol.HARNESS_ERROR,
                  "message": f"{who} failed: {type(exc).__name__}: {exc}"}
    sys.stdout.flush()
    sys.stderr.flush()
    Channel(result_fd).send({"result": result})


def reference_main(job, result_fd, device, memory_base):
    """A reference worker: trusted, runs the task's own code only."""
    def compute():
        isolation.apply_limits(dict(_child_limits(job["limits"], device), network=True),
                               device, memory_base, True)
        faulthandler.enable()
        from . import reference
        from .runner import limit_device_memory
        limit_device_memory(device, job["limits"].get("device_memory_mb"))
        return reference.compute(job, device)
    _answer(result_fd, "the reference worker", compute)


def judge_main(command_fd, result_fd, threads):
    """A judge: compares handed-over outputs with the stored reference, until EOF."""
    faulthandler.enable()
    from . import judge
    judge.serve(Channel(result_fd, command_fd), threads)


def check_main(request, result_fd):
    """The L1 check: parses the candidate's code, never runs it."""
    task, candidate = request["task"], request["candidate"]
    _answer(result_fd, "the checker", lambda: checker.check(
        candidate["code"], candidate["language"], task["path"] if task else None,
        request["options"].get("rules_file")))
