"""The server's children as it sees them: their pipes, deadlines and process trees, and
what their deaths mean."""

import fcntl
import math
import os
import signal
import socket
import stat
import time

from kforge_harness import protocol


class Proc:
    """A child process of the server: its role, its own directory (log.txt), the channel
    it writes to (`read_fd`: a pipe, or a socket where it sends descriptors, `fd_socket`)
    and, for the candidate child and the task host, the channel it reads commands from
    (`command_fd`)."""

    def __init__(self, role, pid, workdir, read_fd, command_fd=None, fd_socket=False):
        self.role = role  # "candidate", "host" or "check"
        self.pid = pid
        self.workdir = workdir
        self.read_fd = read_fd
        self.reader = socket.socket(fileno=os.dup(read_fd)) if fd_socket else None
        self.received_fds = []
        self.commands = 0  # command lines sent: each may get one line back
        self.command_fd = command_fd
        self.buffer = bytearray()
        self.started = time.monotonic()
        self.deadline = math.inf
        self.timed_out = False
        self.flooded = False
        self.cgroup = None  # a candidate child's freezer.Group, once its code may run
        self.worker = None  # the sandbox's worker (sandbox_worker), found before its code ran
        self.received = 0  # bytes read from `read_fd`
        self.lines = 0  # lines read from `read_fd`
        # A task host's: close command id -> the response of the job whose session it
        # closes, sent once the host has freed the session's buffers (a retired host: once
        # it has exited), so that the job's device memory is free when the client hears
        # of it and admits the next job.
        self.held_responses = {}
        self.owner = None  # the Job (or, for a task host, its TaskEntry)

    def parent_fds(self):
        fds = [fd for fd in (self.read_fd, self.command_fd) if fd is not None]
        if self.reader is not None:
            fds.append(self.reader.fileno())
        return fds

    def send(self, obj, fds=()):
        """One command line (with descriptors, over a socket); False when the child is
        gone."""
        if self.command_fd is None:
            return False
        data = protocol.encode(dict(obj, fds=len(fds)) if fds else obj).encode("utf-8")
        try:
            if fds:
                with socket.socket(fileno=os.dup(self.command_fd)) as sock:
                    data = data[socket.send_fds(sock, [data], list(fds)):]
            while data:
                data = data[os.write(self.command_fd, data):]
        except OSError:
            return False
        self.commands += 1
        return True

    def read(self):
        """What the child wrote since the last read (b"" at EOF; None when nothing is
        there now); descriptors that came with it go to received_fds."""
        try:
            if self.reader is not None:
                data, fds, _, _ = socket.recv_fds(self.reader, 1 << 16, 64)
                self.received_fds += fds
                return data
            return os.read(self.read_fd, 1 << 16)
        except BlockingIOError:
            return None

    def take_fds(self, count):
        taken, self.received_fds = self.received_fds[:count], self.received_fds[count:]
        if len(taken) != count:
            for fd in taken:
                os.close(fd)
            raise OSError(f"the {self.role} announced {count} descriptor(s), {len(taken)} came")
        return taken

    def close_read(self):
        if self.reader is not None:
            self.reader.close()
            self.reader = None
        if self.read_fd is not None:
            os.close(self.read_fd)
            self.read_fd = None
        for fd in self.received_fds:
            os.close(fd)
        self.received_fds = []

    def close_commands(self):
        if self.command_fd is not None:
            os.close(self.command_fd)
            self.command_fd = None


def set_nonblocking(fd):
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)


def kill_group(pid):
    # The child leads its own process group (setsid), so this also ends what it started.
    for kill, target in ((os.killpg, pid), (os.kill, pid)):
        try:
            kill(target, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def descendants(pid):
    """Every process below `pid` (children, theirs...), from /proc: the sandbox's worker,
    its PID namespace's reaper and whatever the candidate started (orphans are
    re-parented inside the tree: to the namespace's reaper, or to the supervisor, a
    subreaper)."""
    found, frontier = [], [pid]
    while frontier:
        parent = frontier.pop()
        try:
            threads = os.listdir(f"/proc/{parent}/task")  # a glob costs twice as much
        except OSError:
            continue
        for thread in threads:
            try:
                with open(f"/proc/{parent}/task/{thread}/children", "rb") as handle:
                    children = [int(x) for x in handle.read().split()]
            except (OSError, ValueError):
                continue
            for child in children:
                if child not in found:
                    found.append(child)
                    frontier.append(child)
    return found


def sandbox_worker(pid):
    """The process a candidate child's code runs in, below `pid` (sandbox/__init__.py: the
    supervisor S has two children, the PID namespace's reaper, PID 1 there, and the worker;
    without a PID namespace of its own, the worker alone; without a sandbox, `pid`
    itself). Found from what the kernel says of S's children, never from the child."""
    children = []
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for thread in threads:
        try:
            with open(f"/proc/{pid}/task/{thread}/children", "rb") as handle:
                children += [int(x) for x in handle.read().split()]
        except (OSError, ValueError):
            continue
    workers = [child for child in children if _namespace_pid(child) != 1]
    if not children:
        return pid
    return workers[0] if len(workers) == 1 else None


def _namespace_pid(pid):
    """A process's pid in its innermost PID namespace (None if it is gone)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as handle:
            for line in handle:
                if line.startswith("NSpid:"):
                    return int(line.split()[-1])
    except (OSError, ValueError):
        return None
    return None


def signal_tree(pid, sig):
    """Sends `sig` to every process below `pid` until no new one appears (a process
    forking while the tree is walked). For SIGSTOP: nothing below `pid` runs afterwards."""
    done = set()
    while True:
        pending = [p for p in descendants(pid) if p not in done]
        if not pending:
            return
        for child in pending:
            try:
                os.kill(child, sig)
            except (ProcessLookupError, PermissionError):
                pass
            done.add(child)


def freeze_tree(pid, patience_s=0.5):
    """SIGSTOP to every process below `pid` until all of them are seen stopped, twice over,
    and then no other below `pid` (a fork that completed as its parent was being
    stopped): processes that continue each other (one stopped, another sends it SIGCONT)
    are stopped again, round after round. Returns the frozen processes (nothing of the
    tree runs until continue_tree(them)), or None when they would not all stay stopped
    within `patience_s`. A stop in flight lands within microseconds on an idle machine,
    but only when the process next runs: on a loaded one (a 2-core machine at load 8-12)
    that took longer than 40 rounds of 0.2 ms, and an honest candidate was rejected."""
    deadline = time.monotonic() + patience_s
    while True:
        tree = descendants(pid)
        for child in tree:
            try:
                os.kill(child, signal.SIGSTOP)
            except (ProcessLookupError, PermissionError):
                pass
        # All stopped before the second walk: nothing below `pid` could fork after it.
        # The second look at their states catches one continued by another that was
        # still running when the first look passed it.
        if (_await_stopped(tree, min(deadline, time.monotonic() + ROUND_S))
                and all(_stopped(child) for child in tree) and set(descendants(pid)) == set(tree)):
            return tree
        if time.monotonic() >= deadline:
            return None


# How long a round of freeze_tree waits for its stops to land before it sends them again
# (a process the tree continued meanwhile needs a new one).
ROUND_S = 0.02


def _await_stopped(pids, deadline):
    """Whether every process of `pids` is seen stopped by `deadline`. A stop is delivered
    when its process next runs: the wait yields the CPU to it rather than sleeping (a
    sleep is a millisecond or more on a loaded machine, and every timed call waits for
    this), and reads nothing but the processes' states."""
    waiting = list(pids)
    while True:
        waiting = [child for child in waiting if not _stopped(child)]
        if not waiting:
            return True
        if time.monotonic() > deadline:
            return False
        os.sched_yield()


def continue_tree(frozen):
    """SIGCONT to the processes freeze_tree() returned: all of the tree, since none of it
    ran (or forked) in between. Two walks of /proc fewer inside a timed call's bracket."""
    for child in frozen:
        try:
            os.kill(child, signal.SIGCONT)
        except (ProcessLookupError, PermissionError):
            pass


def still_frozen(pid, frozen, used):
    """Whether the tree below `pid` is what freeze_tree() returned, every process of it
    still stopped and none of it having run since (`used`: cpu_used(frozen) when it was
    frozen): a process that ended meanwhile (its death signals its parent, and a parent
    can choose SIGCONT as that signal), one that runs again, or one that ran and stopped
    itself again (continued by a timer that sends SIGCONT, then SIGSTOP to itself) is the
    candidate's work between calls."""
    return (all(_stopped(child) for child in frozen) and set(descendants(pid)) == set(frozen)
            and not _ran_since(used, cpu_used(frozen)))


def _ran_since(before, after):
    """Whether the tree ran between two cpu_used() reads: a thread born, or its threads'
    time on a CPU grown by more than FROZEN_SLACK_NS together. Not to the nanosecond: a
    thread stopped in the middle of its time on a CPU can read stopped before the kernel
    has added that stretch to its runtime, and under load it can be taken off the CPU on
    its way to the stop and finish it later (seen: 0.7 ms on an honest reference's main
    thread, several honest verdicts under the signal freezer in a full ctest run). A
    thread that ended while stopped (it was exiting: state Z) is no work."""
    threads_before = {(pid, tid): ns for pid, tid, ns in before if tid}
    threads_after = {(pid, tid): ns for pid, tid, ns in after if tid}
    if set(threads_after) - set(threads_before):
        return True
    if any(ns < 0 for ns in threads_after.values()):
        return after != before  # a runtime this kernel does not show: exactly as before
    grown = sum(max(0, ns - threads_before[key]) for key, ns in threads_after.items())
    return grown > FROZEN_SLACK_NS


# What a frozen tree's threads may add to their time on a CPU between two looks without
# having run: the stretch a stopping thread had not yet been charged (at most a scheduler
# tick, 4 ms at 250 Hz; 0.7 ms seen). Work beside a frozen call gains little within it:
# the next call's inputs are not where the child can read them until its bracket opens.
FROZEN_SLACK_NS = 5_000_000


def cpu_used(pids):
    """What the processes `pids` have run, to tell whether they ran since: per process
    its CPU time in clock ticks (user and system, its ended threads included:
    /proc/PID/stat), and per thread its time on a CPU in nanoseconds (/proc/PID/task/TID/
    schedstat, where the kernel keeps it: a run shorter than a tick shows there). A
    process gone counts nothing; a thread born or ended changes the value too."""
    used = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as handle:
                stat = handle.read()
            threads = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        used.append((pid, 0, int(fields[11]) + int(fields[12])))  # utime, stime (fields 14, 15)
        for thread in threads:
            try:
                with open(f"/proc/{pid}/task/{thread}/schedstat", "rb") as handle:
                    used.append((pid, int(thread), int(handle.read().split()[0])))
            except (OSError, ValueError, IndexError):
                used.append((pid, int(thread), -1))
    return tuple(sorted(used))


def _stopped(pid):
    """Whether `pid` is stopped (or gone): every one of its threads, from
    /proc/PID/task/TID/stat. The process's own stat shows its main thread only, which
    can exit (a zombie leader) while the others run on."""
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return True
    states = []
    for thread in threads:
        try:
            with open(f"/proc/{pid}/task/{thread}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue  # that thread is gone
        states.append(stat[stat.rfind(b")") + 2:stat.rfind(b")") + 3])
    if all(state in (b"Z", b"X") for state in states):
        return True  # the whole process has exited
    return all(state in (b"T", b"t", b"Z", b"X") for state in states if state not in (b"Z", b"X"))


def death_text(proc, status, limits, where):
    if proc.timed_out and limits is not None:
        return f"wall-clock limit of {limits['timeout_s']:g} s hit{where}"
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        return f"killed by {signal_name(sig)} ({signal.strsignal(sig)}){where}"
    return f"exited with status {os.WEXITSTATUS(status)}{where}"


def death_verdict(proc, status, limits, where):
    """The verdict for a candidate child that died before its verdict was known."""
    flags = []
    if proc.timed_out:
        error_class = protocol.TIMEOUT
        message = (f"wall-clock limit of {limits['timeout_s']:g} s hit{where}; the "
                   "child's process group was killed")
    elif os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        name = signal_name(sig)
        if sig == signal.SIGXCPU:
            error_class = protocol.TIMEOUT
            message = f"CPU-time limit of {limits['cpu_s']} s hit{where} ({name})"
        else:
            error_class = protocol.CRASH
            message = f"the child was killed by {name} ({signal.strsignal(sig)}){where}"
            if sig == signal.SIGKILL:
                message += ": not by the harness; often the kernel's OOM killer"
                flags.append("out_of_memory")
    else:
        error_class = protocol.RUNTIME_ERROR
        message = (f"the child exited with status {os.WEXITSTATUS(status)}{where} "
                   "before reporting a result")
    result = fail(error_class, message)
    result["flags"] = flags
    return result


def signal_name(sig):
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


def error(error_class, message):
    return {"status": "error", "error_class": error_class, "message": message}


def fail(error_class, message):
    return {"status": "fail", "error_class": error_class, "message": message}


def log_tail(path):
    """The end of a child's log. The candidate can replace its log.txt: a link to the
    server's secrets (/proc/self/environ) is not followed, and a FIFO or a device is not
    read, so the tail holds nothing but what the candidate wrote itself."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return ""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return ""
        with os.fdopen(fd, "rb") as handle:
            fd = None
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - 4 * protocol.MAX_LOG_TAIL_CHARS))
            return handle.read().decode("utf-8", errors="replace")[-protocol.MAX_LOG_TAIL_CHARS:]
    except OSError:
        return ""
    finally:
        if fd is not None:
            os.close(fd)
