"""The server: reads requests (JSON lines on stdin), runs each in its own child process,
writes responses (JSON lines on stdout) in completion order. PROTOCOL.md is the contract.

fork mode: this process imported torch (and triton) once; each child is a fork of it. The
server never touches the device, so every child can initialise CUDA for itself. One
child is kept on standby: forked ahead of time, it isolates itself from the network,
initialises the device and the harness's own kernels, then waits for a request, so a
request does not wait for that (on a GPU, most of a child's fixed cost). spawn mode: each
child execs a fresh interpreter that runs the same child code (`python -m kforge_harness
child`), for comparison and for hosts where fork is unsafe.

One thread, one select loop over stdin, the children's result pipes and a self-pipe that
SIGCHLD writes to; wall-clock deadlines are the select timeouts."""

import collections
import fcntl
import json
import os
import selectors
import shutil
import signal
import sys
import tempfile
import time
import traceback

from . import child, isolation, protocol

HARNESS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Phases whose failure is not the candidate's: the task's reference or the device setup.
_NOT_CANDIDATE_PHASES = ("reference", "device setup", "harness setup")


class Child:
    """A forked child process, its own temporary directory (log.txt, request.json) and
    the pipes to it: results come back on `read_fd`; a standby child waits for EOF on
    `request_fd` before it reads request.json."""

    def __init__(self, pid, workdir, read_fd, request_fd=None):
        self.pid = pid
        self.workdir = workdir
        self.read_fd = read_fd
        self.request_fd = request_fd

    def parent_fds(self):
        return [fd for fd in (self.read_fd, self.request_fd) if fd is not None]

    def discard(self):
        _kill_group(self.pid)
        os.waitpid(self.pid, 0)
        for fd in self.parent_fds():
            os.close(fd)
        shutil.rmtree(self.workdir, ignore_errors=True)


def _write_request(workdir, request):
    with open(os.path.join(workdir, "request.json"), "w", encoding="utf-8") as handle:
        json.dump(request, handle)


class Job:
    def __init__(self, request):
        self.request = request
        self.id = request["id"]
        self.child = None
        self.buffer = bytearray()
        self.started = 0.0
        self.deadline = 0.0
        self.timed_out = False
        self.phase = None


def _set_nonblocking(fd):
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)


def _kill_group(pid):
    # The child leads its own process group (setsid), so this also ends what it started.
    for kill, target in ((os.killpg, pid), (os.kill, pid)):
        try:
            kill(target, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


class Server:
    def __init__(self, device, mode, max_children, scratch):
        self.device = device
        # Measured after every import, so that limits.memory_mb is on top of them.
        self.memory_base = isolation.memory_baseline(device)
        self.mode = mode
        self.max_children = max(1, max_children)
        self.scratch = scratch
        self.queue = collections.deque()
        self.active = {}  # pid -> Job
        self.standby = None  # fork mode: a warm Child waiting for a request
        self.stdin_open = True
        self.stdin_buffer = bytearray()
        # poll, not epoll: epoll refuses a regular file as stdin (requests from a file).
        self.selector = selectors.PollSelector()
        self.wake_r = self.wake_w = None

    # ---- main loop ----

    def serve(self):
        self.wake_r, self.wake_w = os.pipe()
        _set_nonblocking(self.wake_r)
        _set_nonblocking(self.wake_w)
        signal.set_wakeup_fd(self.wake_w, warn_on_full_buffer=False)
        # A Python-level handler is what makes SIGCHLD reach the wakeup fd.
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
        self.selector.register(0, selectors.EVENT_READ, "stdin")
        self.selector.register(self.wake_r, selectors.EVENT_READ, "wake")
        self._refill_standby()
        try:
            while True:
                while self.queue and len(self.active) < self.max_children:
                    self._start(self.queue.popleft())
                if not self.stdin_open and not self.active and not self.queue:
                    return 0
                for key, _ in self.selector.select(self._select_timeout()):
                    if key.data == "stdin":
                        self._read_stdin()
                    elif key.data == "wake":
                        self._drain(self.wake_r)
                    else:
                        self._read_result(key.data)
                self._reap()
                self._enforce_deadlines()
        finally:
            for job in list(self.active.values()):
                job.child.discard()
            if self.standby is not None:
                self.standby.discard()

    def _select_timeout(self):
        # A killed child's SIGCHLD wakes the loop: only live deadlines bound the wait.
        deadlines = [job.deadline for job in self.active.values() if not job.timed_out]
        if not deadlines:
            return None
        return max(0.0, min(deadlines) - time.monotonic())

    @staticmethod
    def _drain(fd):
        try:
            while os.read(fd, 4096):
                pass
        except BlockingIOError:
            pass

    # ---- requests ----

    def _read_stdin(self):
        data = os.read(0, 1 << 16)
        if not data:
            self.stdin_open = False
            self.selector.unregister(0)
            data = b"\n"
        self.stdin_buffer += data
        *lines, rest = self.stdin_buffer.split(b"\n")
        self.stdin_buffer = bytearray(rest)
        for line in lines:
            if line.strip():
                self._accept(line)

    def _accept(self, line):
        request_id = None
        try:
            raw = json.loads(line)
            request_id = raw.get("id") if isinstance(raw, dict) else None
            self.queue.append(Job(protocol.normalise_request(raw)))
        except ValueError as exc:  # json.JSONDecodeError is a ValueError
            self._respond(protocol.response(request_id, "error", protocol.HARNESS_ERROR,
                                            f"bad request: {exc}"))

    def _respond(self, response):
        sys.stdout.write(protocol.encode(response))
        sys.stdout.flush()

    # ---- children ----

    def _start(self, job):
        # The standby isolated itself from the network already: a request that asks for
        # the network gets a child of its own.
        try:
            if self.standby is not None and not job.request["limits"]["network"]:
                child_process, self.standby = self.standby, None
                _write_request(child_process.workdir, job.request)
                os.close(child_process.request_fd)  # EOF: the standby reads request.json
                child_process.request_fd = None
            else:
                child_process = self._fork(job.request)
        except OSError as exc:  # out of descriptors, processes or scratch space
            self._respond(protocol.response(job.id, "error", protocol.HARNESS_ERROR,
                                            f"cannot start a child process: {exc}"))
            return
        job.child = child_process
        job.started = time.monotonic()
        job.deadline = job.started + float(job.request["limits"]["timeout_s"])
        self.active[child_process.pid] = job
        self.selector.register(child_process.read_fd, selectors.EVENT_READ, job)
        self._refill_standby()

    def _refill_standby(self):
        """Forks the next standby. Only here, at start and after a dispatch: a standby
        that keeps dying is then replaced at most once per request."""
        if self.mode == "fork" and self.standby is None and self.stdin_open:
            try:
                self.standby = self._fork(None)
            except OSError as exc:  # requests then fork their own children
                print(f"kforge_harness: cannot fork a standby child: {exc}", file=sys.stderr)

    def _fork(self, request):
        """A new child for `request`, or a standby when `request` is None."""
        workdir = tempfile.mkdtemp(prefix="kforge-", dir=self.scratch)
        log_fd = os.open(os.path.join(workdir, "log.txt"),
                         os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        read_fd, write_fd = os.pipe()
        request_r = request_w = None
        if request is None:
            request_r, request_w = os.pipe()
        elif self.mode == "spawn":
            _write_request(workdir, request)
        sys.stdout.flush()
        sys.stderr.flush()
        server_pid = os.getpid()
        pid = os.fork()
        if pid == 0:  # never returns
            self._become_child(request, server_pid, workdir, log_fd, write_fd, request_r,
                               [read_fd, request_w])
        for fd in (write_fd, log_fd, request_r):
            if fd is not None:
                os.close(fd)
        _set_nonblocking(read_fd)
        return Child(pid, workdir, read_fd, request_w)

    def _become_child(self, request, server_pid, workdir, log_fd, write_fd, request_r,
                      parent_fds):
        """In the forked process: leave the server's session, signals and descriptors
        behind, then run the request, wait as the standby, or exec a fresh interpreter
        (spawn)."""
        try:
            os.setsid()
            isolation.die_with_parent(server_pid)
            signal.set_wakeup_fd(-1)
            for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, signal.SIG_DFL)
            parent_fds = parent_fds + [self.wake_r, self.wake_w]
            for job in self.active.values():
                parent_fds += job.child.parent_fds()
            if self.standby is not None:
                parent_fds += self.standby.parent_fds()
            for fd in parent_fds:
                if fd is not None:
                    os.close(fd)
            devnull = os.open(os.devnull, os.O_RDONLY)
            os.dup2(devnull, 0)
            os.dup2(log_fd, 1)
            os.dup2(log_fd, 2)
            os.close(devnull)
            os.close(log_fd)
            if self.mode == "spawn":
                os.set_inheritable(write_fd, True)
                env = dict(os.environ)
                env["PYTHONPATH"] = os.pathsep.join(
                    p for p in (HARNESS_DIR, env.get("PYTHONPATH")) if p)
                os.execve(sys.executable,
                          [sys.executable, "-m", "kforge_harness", "child",
                           "--workdir", workdir, "--result-fd", str(write_fd),
                           "--device", self.device.name,
                           "--memory-base", str(self.memory_base)], env)
            if request is None:
                child.standby(request_r, write_fd, self.device, workdir, self.memory_base)
            else:
                child.run_child(request, write_fd, self.device, workdir, self.memory_base)
        except BaseException:  # noqa: BLE001 - must never fall back into the server loop
            traceback.print_exc()
        finally:
            os._exit(0)

    def _read_result(self, job):
        try:
            data = os.read(job.child.read_fd, 1 << 16)
        except BlockingIOError:
            return
        if data:
            job.buffer += data
        else:  # EOF: everything holding the write end is gone; the reap follows
            self.selector.unregister(job.child.read_fd)
            os.close(job.child.read_fd)
            job.child.read_fd = None

    @staticmethod
    def _exited(pid):
        # WNOWAIT: look without reaping, so the group id stays valid for the kill.
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None

    def _reap(self):
        if self.standby is not None and self._exited(self.standby.pid):
            # Died before it got a request (its log says why); the next request starts
            # a child of its own and a new standby.
            self.standby.discard()
            self.standby = None
        for pid, job in list(self.active.items()):
            if not self._exited(pid):
                continue
            _kill_group(pid)
            _, status = os.waitpid(pid, 0)
            del self.active[pid]
            self._finish(job, status)

    def _enforce_deadlines(self):
        now = time.monotonic()
        for job in self.active.values():
            if not job.timed_out and now >= job.deadline:
                job.timed_out = True
                _kill_group(job.child.pid)

    # ---- responses ----

    def _finish(self, job, status):
        seconds = time.monotonic() - job.started
        read_fd = job.child.read_fd
        if read_fd is not None:
            while True:  # the child has exited: what it wrote is all in the pipe now
                try:
                    data = os.read(read_fd, 1 << 16)
                except BlockingIOError:
                    break
                if not data:
                    break
                job.buffer += data
            self.selector.unregister(read_fd)
            os.close(read_fd)
            job.child.read_fd = None
        result = None
        for line in bytes(job.buffer).splitlines():
            try:
                message = json.loads(line)
            except ValueError:
                continue
            job.phase = message.get("phase", job.phase)
            result = message.get("result", result)
        if result is None:
            result = self._death_verdict(job, status)
        log_tail = _tail(os.path.join(job.child.workdir, "log.txt"))
        shutil.rmtree(job.child.workdir, ignore_errors=True)
        metrics = dict(result.get("metrics") or {})
        metrics["child_seconds"] = seconds
        self._respond(protocol.response(
            job.id, result.get("status", "error"), result.get("error_class", ""),
            result.get("message", ""), log_tail, result.get("findings"),
            result.get("extracted"), metrics, result.get("flags")))

    def _death_verdict(self, job, status):
        """The verdict for a child that died without reporting one."""
        where = f" during {job.phase}" if job.phase else ""
        limits = job.request["limits"]
        if job.timed_out:
            error_class = protocol.TIMEOUT
            message = (f"wall-clock limit of {limits['timeout_s']:g} s hit{where}; the "
                       "child's process group was killed")
        elif os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            name = _signal_name(sig)
            if sig == signal.SIGXCPU:
                error_class = protocol.TIMEOUT
                message = f"CPU-time limit of {limits['cpu_s']} s hit{where} ({name})"
            else:
                error_class = protocol.CRASH
                message = f"the child was killed by {name} ({signal.strsignal(sig)}){where}"
                if sig == signal.SIGKILL:
                    message += ": not by the harness; often the kernel's OOM killer"
        else:
            error_class = protocol.RUNTIME_ERROR
            message = (f"the child exited with status {os.WEXITSTATUS(status)}{where} "
                       "before reporting a result")
        if job.phase is None or job.phase.startswith(_NOT_CANDIDATE_PHASES):
            return {"status": "error", "error_class": protocol.HARNESS_ERROR,
                    "message": f"{error_class} outside the candidate's code: {message}"}
        return {"status": "fail", "error_class": error_class, "message": message}


def _signal_name(sig):
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


def _tail(path):
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - 4 * protocol.MAX_LOG_TAIL_CHARS))
            return handle.read().decode("utf-8", errors="replace")[-protocol.MAX_LOG_TAIL_CHARS:]
    except OSError:
        return ""
