"""What each kind of child runs once it has been forked (the candidate child from the
zygote, or in spawn mode once a fresh interpreter has started; the task host and the
checker from the server): their entry points. The server owns what a child cannot report
itself (signals, timeouts, the log tail, wall time)."""

import faulthandler
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
    code runs in the sandboxed worker it returns in. What the worker needs arrives on its
    command socket (the job, with the task's source text, and the descriptors of the
    buffers its inputs and outputs cross in) or is in `workdir` (an artifact is copied
    in); `hidden_paths` are the server's private places (the other children's
    directories).
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
    """A candidate child (or the reference's own timing child): sandbox, device warm-up
    (ahead of its job when it is the fork-mode standby), then the job, which arrives on
    the command socket with the descriptors of the buffers the task host lends."""
    if device.type == "cuda":
        # The arena's allocator (handover/arena.py), which the job's install needs:
        # inherited from the server in fork mode; loaded here in spawn mode, while its
        # variable is still in the environment (the sandbox drops it).
        from kforge_harness.handover import arena
        arena.load_allocator_early()
    flags, device = enter_candidate_sandbox(workdir, device, hidden_paths, network, memory_base)
    channel = Channel(result_fd, command_fd)
    try:
        from kforge_harness.tasks.runner import warm_up
        warm_up(device)
    except Exception:  # noqa: BLE001 - the job's own device setup reports it properly
        traceback.print_exc()
    command = channel.command()
    if command is None or "job" not in command:  # the server is done with this standby
        return
    job = command["job"]
    buffers = {}
    try:
        fds = channel.take_fds(int(command.get("fds", 0)))
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
        torch_device = device.activate(__import__("torch"))
        limit_device_memory(device, job["limits"].get("device_memory_mb"))
        from kforge_harness import handover
        for description, fd in zip(job["buffers"], fds):
            buffers[description["role"]] = handover.open_buffer(description, fd, torch_device)
    except BaseException as exc:  # noqa: BLE001 - nothing of the candidate has run yet
        traceback.print_exc()
        channel.send({"harness_failed": f"setting up the child failed: {type(exc).__name__}: {exc}"})
        return
    channel.send({"harness_flags": flags})
    from kforge_harness.candidate import candidate
    candidate.run(job, buffers, device, workdir, channel)


def task_host_main(job, command_fd, result_fd, device, memory_base):
    """A task host (reference/host.py): trusted, runs the task's own code only (no
    sandbox: it lends buffers to the children of its task's candidates)."""
    channel = Channel(result_fd, command_fd)
    try:
        if job.get("triton_cache"):
            os.environ["TRITON_CACHE_DIR"] = job["triton_cache"]
        # One hardware queue for this process's CUDA context, read when it is made (below
        # or at the first device call): a host works on one stream, and a context's
        # creation, serialised across a machine's GPUs by the driver, took a third of
        # the time on an H200 host (16 at once: 0.7 s against 2.2 s). Candidates' children
        # keep the default: the queues are their streams' concurrency.
        os.environ["CUDA_DEVICE_MAX_CONNECTIONS"] = "1"
        apply_job_limits(job["limits"], device, memory_base)
        faulthandler.enable()
        from kforge_harness.tasks.runner import limit_device_memory
        limit_device_memory(device, job["limits"].get("device_memory_mb"))
    except BaseException as exc:  # noqa: BLE001 - the harness's own failure
        traceback.print_exc()
        channel.send({"failed": {"status": "error", "error_class": protocol.HARNESS_ERROR,
                                 "message": f"setting up the task host failed: {type(exc).__name__}: {exc}"}})
        return
    from kforge_harness.reference import host
    host.main(job, device, channel)


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
