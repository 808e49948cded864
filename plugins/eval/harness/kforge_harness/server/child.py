"""What each kind of child runs once the server has forked it (or, for the candidate
child in spawn mode, once a fresh interpreter has started): the entry points of the
candidate child, the reference worker, the judge and the checker. The server owns what
a child cannot report itself (signals, timeouts, the log tail, wall time)."""

import faulthandler
import json
import os
import sys
import traceback

from kforge_harness import protocol, sandbox
from kforge_harness.devices import Device
from kforge_harness.protocol.reporter import Channel


def enter_candidate_sandbox(workdir, device, hidden_paths, network, memory_base):
    """THE place a candidate child leaves the trusted side: called first thing in every
    candidate child (the fork-mode standby included, before it initialises the device),
    while the process is still single-threaded. sandbox.enter() forks: this process
    stays outside as the supervisor the server waits for and kills, and the candidate's
    code runs in the sandboxed worker it returns in. Everything the worker needs is in
    `workdir` (the job, with the task's source text, arrives on its command pipe and in
    job.json; an artifact is copied in; its outputs go there); `hidden_paths` are the
    server's private places (the reference store, the other children's directories).
    Limits that depend on the job are applied when it comes (apply_job_limits).
    `network`: the request asked for the network, which the sandbox never gives: such a
    child runs without it (flag sandbox_not_entered). Returns (flags for every verdict of
    this child, the device as it is named inside)."""
    if network:
        return ["sandbox_not_entered"], device
    report = sandbox.enter(workdir, device,
                           limits={"memory_mb": None, "cpu_s": None, "file_size_mb": None},
                           hidden_paths=hidden_paths, memory_base=memory_base)
    return report.flags(), Device(report.device)


def apply_job_limits(limits, device, memory_base, file_size_mb=None):
    """The request's limits on this process: memory on top of `memory_base` (on the CPU,
    where the device is the host, at most the share the client admitted the job with),
    CPU time, and the largest file it may write (None: as it is)."""
    memory_mb = int(limits["memory_mb"])
    admitted = limits.get("device_memory_mb")
    if admitted and not device.is_accelerator:
        memory_mb = min(memory_mb, int(admitted))
    sandbox.apply_rlimits({"memory_mb": memory_mb, "cpu_s": limits["cpu_s"],
                           "file_size_mb": file_size_mb, "processes": None, "open_files": None},
                          device, memory_base)


def candidate_main(command_fd, result_fd, device, workdir, memory_base, hidden_paths,
                   network=False):
    """A candidate child: sandbox, device warm-up (ahead of its job when it is the
    fork-mode standby), then the job (job.json, announced on the command pipe)."""
    flags, device = enter_candidate_sandbox(workdir, device, hidden_paths, network, memory_base)
    channel = Channel(result_fd, command_fd)
    try:
        from kforge_harness.tasks.runner import warm_up
        warm_up(device)
    except Exception:  # noqa: BLE001 - the job's own device setup reports it properly
        traceback.print_exc()
    if channel.command() is None:  # the server is done with this standby
        return
    try:
        with open(os.path.join(workdir, "job.json"), encoding="utf-8") as handle:
            job = json.load(handle)
        apply_job_limits(job["limits"], device, memory_base, job["file_size_mb"])
        # On SIGSEGV/SIGABRT, the Python stack goes to the log: the server reports the
        # signal, the log tail shows which line of the candidate was running.
        faulthandler.enable()
        os.chdir(workdir)
        # load_inline (CUDA candidates) builds under one directory per module name,
        # shared by every process by default: two candidates naming their module alike
        # would build over each other, and the lock file of a build killed at its timeout
        # would stall the next. Each child builds in its own directory, removed with it.
        os.environ["TORCH_EXTENSIONS_DIR"] = os.path.join(workdir, "torch_extensions")
        from kforge_harness.tasks.runner import limit_device_memory
        limit_device_memory(device, job["limits"].get("device_memory_mb"))
    except BaseException as exc:  # noqa: BLE001 - nothing of the candidate has run yet
        traceback.print_exc()
        channel.send({"harness_failed": f"setting up the child failed: {type(exc).__name__}: {exc}"})
        return
    channel.send({"harness_flags": flags})
    from kforge_harness.candidate import candidate
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
    """A reference worker: trusted, runs the task's own code only (no sandbox: it writes
    the reference store; no file-size limit: it writes outputs of any size)."""
    def compute():
        apply_job_limits(job["limits"], device, memory_base)
        faulthandler.enable()
        from kforge_harness.reference import reference
        from kforge_harness.tasks.runner import limit_device_memory
        limit_device_memory(device, job["limits"].get("device_memory_mb"))
        return reference.compute(job, device)
    _answer(result_fd, "the reference worker", compute)


def judge_main(command_fd, result_fd, threads, device=None):
    """A judge: compares handed-over outputs with the stored reference, until EOF; on
    `device` (a devices.Device) for a device judge."""
    faulthandler.enable()
    from kforge_harness.judge import judge
    judge.serve(Channel(result_fd, command_fd), threads, device)


def check_main(request, result_fd, device, memory_base):
    """The L1 check: parses the candidate's code, never runs it."""
    # Imported here, not at the top: it imports torch, which a spawned candidate child
    # must not have loaded before it enters its sandbox (enter_candidate_sandbox).
    from kforge_harness.l1 import checker
    task, candidate = request["task"], request["candidate"]

    def compute():
        apply_job_limits(request["limits"], device, memory_base)
        return checker.check(candidate["code"], candidate["language"],
                             task["path"] if task else None, request["options"].get("rules_file"),
                             task["format"] if task else None)
    _answer(result_fd, "the checker", compute)
