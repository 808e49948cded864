"""How the server stops a candidate's processes between timed calls: the cgroup v2
freezer where this machine lets the server make cgroups, SIGSTOP to every process
(procs.freeze_tree) where it does not.

Between two timed calls nothing of the candidate may run: work done there (the next
output computed ahead) is work no clock brackets. SIGSTOP cannot promise it, since the
candidate holds the means to undo it: a POSIX timer or a helper process sends SIGCONT,
a thread runs on until the stop lands. The server sees that only by looking again, and
looks can be dodged (red team 4: a timer continues the process after the freeze held, a
thread computes the output, the process stops itself before the next look). A frozen
cgroup is the kernel's promise instead: none of its tasks runs in user space until the
server thaws it, whatever signal arrives; a task forked inside stays inside; and its
files are out of the candidate's sight (the sandbox shows no /sys/fs/cgroup) and owned by
the server's user.

One cgroup per candidate child, below a directory of this server's
(<its own cgroup>/kforge-<pid>), holding the processes below the child's supervisor (the
sandbox's PID 1 and worker, and whatever the candidate starts): the supervisor itself
stays outside, as it stays running under SIGSTOP."""

import errno
import os
import time

from kforge_harness.server import procs

# How long a freeze may take to land (every task of the cgroup out of user space) before
# the server calls it the candidate's doing: a task in a long system call delays it.
FREEZE_PATIENCE_S = 1.0


def _cgroup2_mount():
    """Where the cgroup v2 hierarchy is mounted (/sys/fs/cgroup, or /sys/fs/cgroup/unified
    on a hybrid host), or None."""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8") as handle:
            for line in handle:
                fields = line.split()
                separator = fields.index("-")
                if fields[separator + 1] == "cgroup2":
                    return fields[4].replace("\\040", " ")
    except (OSError, ValueError, IndexError):
        pass
    return None


def _own_cgroup():
    """This process's cgroup v2 path ("0::/a/b" in /proc/self/cgroup), or None."""
    try:
        with open("/proc/self/cgroup", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("0::"):
                    return line[3:].strip()
    except OSError:
        pass
    return None


def _write(path, text):
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _read(path):
    with open(path, "rb") as handle:
        return handle.read()


class Freezer:
    """The server's cgroups: `why_not` says why there are none (the signal freeze is
    used then), `describe()` is the run's environment fact."""

    def __init__(self, base=None, root=None, why_not=""):
        self.base = base  # this server's own cgroup
        self.root = root  # this server's directory of cgroups below it, or None
        self.why_not = why_not
        self.next_id = 0
        self.emptying = []  # removed groups whose killed processes had not all gone yet

    @classmethod
    def open(cls):
        mount, own = _cgroup2_mount(), _own_cgroup()
        if mount is None or own is None:
            return cls(why_not="no cgroup v2 hierarchy is mounted")
        base = os.path.join(mount, own.lstrip("/"))
        _remove_stale(base)
        root = os.path.join(base, f"kforge-{os.getpid()}")
        try:
            os.mkdir(root)
        except FileExistsError:
            pass
        except OSError as exc:
            return cls(why_not=f"cannot make a cgroup in {base}: {os.strerror(exc.errno)}")
        # Moving a process between cgroups takes write access to both and to their common
        # ancestor: this server's own cgroup.
        if not os.path.exists(os.path.join(root, "cgroup.freeze")):
            os.rmdir(root)
            return cls(why_not="the kernel's cgroup v2 has no freezer (Linux 5.2 or later has)")
        if not os.access(os.path.join(base, "cgroup.procs"), os.W_OK):
            os.rmdir(root)
            return cls(why_not=f"cannot move processes out of {base}")
        return cls(base, root)

    def describe(self):
        return "cgroup v2" if self.root is not None else f"signals ({self.why_not})"

    def group(self, pids):
        """A new frozen-able cgroup holding `pids` (processes that do not fork meanwhile),
        or None where they cannot be moved (the signal freeze is used then)."""
        if self.root is None:
            return None
        self.next_id += 1
        path = os.path.join(self.root, f"child-{self.next_id}")
        moved = []
        try:
            os.mkdir(path)
            for pid in pids:
                try:
                    _write(os.path.join(path, "cgroup.procs"), str(pid))
                    moved.append(pid)
                except ProcessLookupError:
                    pass  # it has exited
        except OSError as exc:
            for pid in moved:  # back where they were, running as they would have
                try:
                    _write(os.path.join(self.base, "cgroup.procs"), str(pid))
                except OSError:
                    pass
            _removed(path)
            self.why_not = f"cannot move a child's processes into a cgroup: {os.strerror(exc.errno)}"
            return None
        return Group(self, path)

    def sweep(self):
        """Removes the groups whose last processes have gone since."""
        self.emptying = [path for path in self.emptying if not _removed(path)]

    def close(self):
        """Kills what is left in this server's cgroups and removes them."""
        if self.root is not None:
            try:
                below = [entry.path for entry in os.scandir(self.root) if entry.is_dir()]
            except FileNotFoundError:
                return  # closed already
            for path in below + [self.root]:
                _kill(path)
                deadline = time.monotonic() + 1.0
                while not _removed(path) and time.monotonic() < deadline:
                    time.sleep(0.001)


class Group:
    """One candidate child's cgroup."""

    def __init__(self, freezer, path):
        self.freezer = freezer
        self.path = path

    def start_freeze(self):
        try:
            _write(os.path.join(self.path, "cgroup.freeze"), "1")
        except OSError:
            pass  # removed with its child's end: frozen() says no

    def frozen_within(self, seconds):
        """Whether the group, once start_freeze() was called, is frozen within `seconds`."""
        deadline = time.monotonic() + seconds
        while not self.frozen():
            if time.monotonic() > deadline:
                return False
            os.sched_yield()  # the freeze lands as the tasks next run: let them
        return True

    def frozen(self):
        """Whether the group is frozen now, every process of it."""
        try:
            return b"\nfrozen 1\n" in b"\n" + _read(os.path.join(self.path, "cgroup.events"))
        except OSError:
            return False

    def thaw(self):
        try:
            _write(os.path.join(self.path, "cgroup.freeze"), "0")
        except OSError:
            pass  # removed already

    def remove(self):
        """Kills what is left in the group and removes it, now or, while the killed
        processes are still on their way out, at a later sweep()."""
        _kill(self.path)
        if not _removed(self.path):
            self.freezer.emptying.append(self.path)


def _kill(path):
    """Every process of the cgroup at `path` killed (cgroup.kill, Linux 5.14; before it,
    each listed process), after a thaw: a frozen task dies only once it runs."""
    try:
        _write(os.path.join(path, "cgroup.freeze"), "0")
    except OSError:
        pass
    try:
        _write(os.path.join(path, "cgroup.kill"), "1")
        return
    except OSError:
        pass
    try:
        pids = [int(p) for p in _read(os.path.join(path, "cgroup.procs")).split()]
    except (OSError, ValueError):
        return
    for pid in pids:
        procs.kill_group(pid)


def _removed(path):
    """Whether the cgroup at `path` is gone (removed now, or before); a cgroup is busy
    while a process is in it."""
    try:
        os.rmdir(path)
    except OSError as exc:
        # EBUSY: a process is still in it. Another error is not worth stopping the server
        # for: the next server removes what is left (_remove_stale).
        return exc.errno != errno.EBUSY
    return True


def _remove_stale(base):
    """The empty cgroups of servers that died without removing theirs (kill -9). Only
    removed, never killed: a server in another PID namespace (its pid not in this /proc)
    may share this cgroup, and a dead server's groups empty themselves (the sandbox's
    PID 1 dies with its supervisor, and the namespace with it)."""
    try:
        names = os.listdir(base)
    except OSError:
        return
    for name in names:
        pid = name[len("kforge-"):]
        if not (name.startswith("kforge-") and pid.isdigit()) or os.path.exists(f"/proc/{pid}"):
            continue
        root = os.path.join(base, name)
        try:
            below = [entry.path for entry in os.scandir(root) if entry.is_dir()]
        except OSError:
            continue
        for path in below + [root]:
            _removed(path)
