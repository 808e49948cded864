"""Runs one attack snippet the way the harness runs a candidate, for test_sandbox.py:

    python3 sandbox_driver.py SPEC.json

This process plays the server: it imports what the spec asks (torch), calls
sandbox.prepare(), holds a planted "store" file open and a secret in its memory, and
listens on 127.0.0.1. Its forked child plays the candidate's child: its own session, the
log as stdout/stderr, then sandbox.enter() (unless the spec says `sandboxed: false`, the
control run that shows the attack works without the sandbox), then the snippet. The
snippet calls `found(key=value, ...)` to record what it reached (written to
result.json in the work dir, which the worker may write). The driver prints one JSON line:
the child's exit status, what it found, and the sandbox's report.
"""

import ctypes
import json
import os
import signal
import socket
import struct
import sys
import time
import traceback

HARNESS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, HARNESS_DIR)

SECRET_MEMORY = b"kforge-driver-memory-secret"


def _deny_unshare_filter():
    """A container-like host for the test of missing protections: unshare (and so every
    namespace) refused with EPERM, everything else allowed."""
    from kforge_harness.sandbox import seccomp
    arch = seccomp.current_arch()
    insns = [(0x20, 0, 0, 0),  # ld nr
             (0x15, 0, 1, arch.numbers["unshare"]),  # jeq unshare
             (0x06, 0, 0, 0x00050000 | 1),  # ret ERRNO(EPERM)
             (0x06, 0, 0, 0x7FFF0000)]  # ret ALLOW
    program = b"".join(struct.pack("HBBI", *insn) for insn in insns)
    buffer = ctypes.create_string_buffer(program, len(program))

    class Fprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = Fprog(len(insns), ctypes.cast(buffer, ctypes.c_void_p).value)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS: what an unprivileged filter needs
    if libc.syscall(ctypes.c_long(arch.numbers["seccomp"]), 1, 0, ctypes.byref(fprog)) != 0:
        raise OSError(ctypes.get_errno(), "cannot install the test's seccomp filter")


def _child(spec, workdir, context):
    os.setsid()
    log = os.open(os.path.join(workdir, "log.txt"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                  0o600)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    results = {}

    def found(**values):
        results.update(values)
        with open(os.path.join(workdir, "result.json"), "w", encoding="utf-8") as handle:
            json.dump(results, handle)

    try:
        if spec.get("deny_unshare"):
            _deny_unshare_filter()
        report = None
        if spec["sandboxed"]:
            from kforge_harness import sandbox
            report = sandbox.enter(workdir, spec.get("device", "cpu"), spec.get("limits"),
                                   extra_env=spec.get("extra_env"),
                                   readonly_paths=spec.get("readonly", ()),
                                   hidden_paths=spec.get("hidden", ()),
                                   required=spec.get("required", ()))
            found(report=json.loads(report.to_json()))
        namespace = {"found": found, "WORKDIR": workdir, "report": report, **context,
                     **spec.get("args", {})}
        exec(compile(spec["code"], "attack.py", "exec"), namespace)
    except BaseException as exc:  # noqa: BLE001 - the test reads it from result.json
        traceback.print_exc()
        found(exception=f"{type(exc).__name__}: {exc}")
        sys.stdout.flush()
        os._exit(99)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(spec.get("exit_code", 0))


def main():
    with open(sys.argv[1], encoding="utf-8") as handle:
        spec = json.load(handle)
    if spec.get("import_torch"):
        import torch  # noqa: F401 - the server has it imported when it forks
    from kforge_harness import sandbox
    sandbox.prepare()
    workdir = spec["workdir"]
    store = os.open(spec["store"], os.O_RDWR)  # like kforge.db, open in an ancestor
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    secret = ctypes.create_string_buffer(SECRET_MEMORY)
    context = {"DRIVER_PID": os.getpid(), "STORE_FD": store,
               "PORT": listener.getsockname()[1],
               "SECRET_ADDRESS": ctypes.addressof(secret), "SECRET_LENGTH": len(SECRET_MEMORY)}
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        _child(spec, workdir, context)
    deadline = time.monotonic() + spec.get("timeout_s", 60)
    status = None
    while status is None and time.monotonic() < deadline:
        done, wait_status = os.waitpid(pid, os.WNOHANG)
        if done:
            status = wait_status
        else:
            time.sleep(0.01)
    timed_out = status is None
    # The child's session: what an unsandboxed control run left behind (a fork bomb's
    # children), or the child itself at the time limit.
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    if timed_out:
        _, status = os.waitpid(pid, 0)
    results = {}
    try:
        with open(os.path.join(workdir, "result.json"), encoding="utf-8") as handle:
            results = json.load(handle)
    except (OSError, ValueError):
        pass
    with open(os.path.join(workdir, "log.txt"), "rb") as handle:
        handle.seek(0, os.SEEK_END)
        handle.seek(max(0, handle.tell() - 4000))
        log_tail = handle.read().decode("utf-8", "replace")
    print(json.dumps({
        "exit_code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
        "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
        "timed_out": timed_out, "results": results, "log_tail": log_tail}))


if __name__ == "__main__":
    main()
