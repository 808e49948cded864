"""The zygote: the process every candidate child is forked from (fork mode).

A forked child is a copy of its parent's memory. If candidates were forked from the
server, a candidate could read in its own memory whatever the server held when it forked:
queued requests (another candidate's source), the run's secret seed and the seeds derived
from it, the reference's stored timing. So the server forks the zygote first, right
after its imports and before it reads a single request, and never sends it anything but
"fork": the zygote holds the imported libraries, the device's name and the paths to hide,
and nothing of any task, request, seed, timing or candidate. `tests/test_zygote.py`
scans a candidate child's readable memory for them.

    server --fork--> zygote --fork--> intermediate --fork--> child
                                         (exits at once)

The server is a child subreaper (PR_SET_CHILD_SUBREAPER): when the intermediate exits,
its child is re-parented to the server, which then waits for it, signals it and reads its
exit status exactly as for a child it forked itself. Requests go over a SOCK_SEQPACKET
socket, one message each: a JSON object and the descriptors the child keeps (its log, the
pipe it reports on, the socket it reads commands from); the answer is {"pid": P} or
{"error": text}."""

import array
import ctypes
import json
import os
import signal
import socket
import sys
import traceback

_PR_SET_CHILD_SUBREAPER = 36
_MAX_MESSAGE = 1 << 16
# The descriptors of a fork request, in this order.
FDS = ("log", "result", "command")


def become_subreaper():
    """Makes this process (the server) the parent of the zygote's grandchildren."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")


class Zygote:
    """The server's handle on its zygote."""

    def __init__(self, child_main, keep_fds=()):
        """Forks the zygote now. `child_main(request, fds)` is what each forked child runs
        (never returns); `keep_fds`: descriptors of the server the zygote keeps (none
        else survives into it)."""
        become_subreaper()
        self.server_pid = os.getpid()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            try:
                ours.close()
                _zygote_main(theirs, self.server_pid, child_main, keep_fds)
            except BaseException:  # noqa: BLE001 - never back into the server's code
                traceback.print_exc()
            finally:
                os._exit(0)
        theirs.close()
        self.pid = pid
        self.socket = ours

    def fork(self, request, fds):
        """A new child: `request` (JSON-able) and `fds` (log, result, command) reach
        child_main; returns its pid (now a child of this process). Raises OSError when the
        zygote cannot fork or is gone."""
        data = json.dumps(request).encode()
        try:
            socket.send_fds(self.socket, [data], list(fds))
            answer = self.socket.recv(_MAX_MESSAGE)
        except OSError as exc:
            raise OSError(exc.errno, f"the zygote is gone: {exc}") from None
        if not answer:
            raise OSError("the zygote is gone")
        reply = json.loads(answer)
        if "pid" not in reply:
            raise OSError(reply.get("error", "the zygote could not fork"))
        return int(reply["pid"])

    def close(self):
        self.socket.close()


def _zygote_main(sock, server_pid, child_main, keep_fds):
    os.setsid()
    from kforge_harness.sandbox import isolation
    isolation.die_with_parent(server_pid)
    signal.set_wakeup_fd(-1)
    for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, signal.SIG_DFL)
    # Nothing of the server's descriptors but its error stream: the protocol's stdin and
    # stdout are the server's alone.
    keep = {sock.fileno(), 2, *keep_fds}
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    keep |= {0, 1}
    for fd in _open_fds():
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(sock, _MAX_MESSAGE, len(FDS))
        except OSError:
            return
        if not data:
            return  # the server closed its end
        try:
            if len(fds) != len(FDS):
                raise OSError(f"a fork request with {len(fds)} descriptors")
            pid = _fork_child(json.loads(data), fds, sock, server_pid, child_main)
            reply = {"pid": pid}
        except Exception as exc:  # noqa: BLE001 - answered, the zygote goes on
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        finally:
            for fd in fds:
                os.close(fd)
        sock.send(json.dumps(reply).encode())


def _open_fds():
    try:
        return [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        return list(range(3, 256))


def _fork_child(request, fds, sock, server_pid, child_main):
    """Forks the intermediate, which forks the child and exits; returns the child's pid."""
    read_end, write_end = os.pipe()
    intermediate = os.fork()
    if intermediate == 0:
        try:
            os.close(read_end)
            child = os.fork()
            if child == 0:
                os.close(write_end)
                sock.close()
                _become_child(request, fds, server_pid, child_main)
            os.write(write_end, array.array("q", [child]).tobytes())
        finally:
            os._exit(0)
    os.close(write_end)
    try:
        data = os.read(read_end, 8)
    finally:
        os.close(read_end)
    os.waitpid(intermediate, 0)
    if len(data) != 8:
        raise OSError("the intermediate process died before it forked")
    return array.array("q", data)[0]


def _become_child(request, fds, server_pid, child_main):
    """In the child: wait to be the server's, take its descriptors, run child_main."""
    try:
        # The intermediate exits right after the fork: until then the parent is not the
        # server, and a parent-death signal set now would fire at that exit.
        while os.getppid() != server_pid:
            if os.getppid() == 1:  # the server is gone
                os._exit(1)
            os.sched_yield()
        os.setsid()
        from kforge_harness.sandbox import isolation
        isolation.die_with_parent(server_pid)
        log, result, command = fds
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(devnull)
        os.close(log)
        child_main(request, {"result": result, "command": command})
    except BaseException:  # noqa: BLE001 - never back into the zygote's loop
        traceback.print_exc()
    finally:
        os._exit(0)
