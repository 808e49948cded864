"""The code one child runs for one request, the same in fork and spawn mode: confine
itself, do the action, write the result to the result pipe. The server owns everything
the child cannot report itself (signals, timeouts, the log tail, timing)."""

import faulthandler
import json
import os
import sys
import traceback

from . import checker, isolation, protocol
from .reporter import Reporter


def standby(request_fd, result_fd, device, workdir, memory_base):
    """A fork-mode child forked ahead of its request: isolates itself from the network
    (while it is still single-threaded), initialises the device and the harness's own
    kernels, then waits for the server to close `request_fd` and runs request.json."""
    reporter = Reporter(result_fd)
    reporter.phase("harness setup: warming up")
    network_isolated = isolation.isolate_network()
    try:
        from .runner import warm_up
        warm_up(device)
    except Exception:  # noqa: BLE001 - the request's own device setup reports it properly
        traceback.print_exc()
    while os.read(request_fd, 4096):
        pass
    os.close(request_fd)
    with open(os.path.join(workdir, "request.json"), encoding="utf-8") as handle:
        request = json.load(handle)
    run_child(request, result_fd, device, workdir, memory_base, network_isolated)


def run_child(request, result_fd, device, workdir, memory_base, network_isolated=False):
    """Runs one request in this (already forked or freshly spawned) process;
    `memory_base`: the server's isolation.memory_baseline()."""
    reporter = Reporter(result_fd)
    flags = []
    try:
        reporter.phase("harness setup")
        flags = isolation.apply_limits(request["limits"], device, memory_base,
                                       network_isolated)
        # On SIGSEGV/SIGABRT, the Python stack goes to the log: the server reports the
        # signal, the log tail shows which line of the candidate was running.
        faulthandler.enable()
        os.chdir(workdir)
        # load_inline (CUDA candidates) builds under one directory per module name, shared
        # by every process by default: two candidates naming their module alike would
        # build over each other, and the lock file of a build killed at its timeout would
        # stall the next. Each child builds in its own directory, removed with it.
        os.environ["TORCH_EXTENSIONS_DIR"] = os.path.join(workdir, "torch_extensions")
        result = _dispatch(request, reporter, device, workdir)
    except protocol.Verdict as verdict:
        result = {"status": verdict.status, "error_class": verdict.error_class,
                  "message": verdict.message, "metrics": verdict.metrics,
                  "flags": verdict.flags, "findings": verdict.findings}
    except BaseException as exc:  # noqa: BLE001 - a harness bug must still answer
        traceback.print_exc()
        result = {"status": "error", "error_class": protocol.HARNESS_ERROR,
                  "message": f"harness failure: {type(exc).__name__}: {exc}"}
    result["flags"] = flags + result.get("flags", [])
    sys.stdout.flush()
    sys.stderr.flush()
    reporter.result(result)


def _dispatch(request, reporter, device, workdir):
    action = request["action"]
    if action == "check":
        reporter.phase("static check")
        task = request["task"]
        candidate = request["candidate"]
        return checker.check(candidate["code"], candidate["language"],
                             task["path"] if task else None,
                             request["options"].get("rules_file"))
    # The runner imports torch; a check request in spawn mode stays light without it.
    reporter.phase("harness setup: importing torch")
    from .runner import Runner
    runner = Runner(request, reporter, device, workdir)
    return runner.compile() if action == "compile" else runner.run()
