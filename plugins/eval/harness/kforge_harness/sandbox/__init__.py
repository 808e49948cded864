"""A sandbox for one candidate process: what candidate code can reach, it may reach; the
rest of the machine is out of its sight.

    report = sandbox.enter(workdir, "cuda:1", {"memory_mb": 16384, "cpu_s": 300},
                           extra_env={"KFORGE_CPP_ARTIFACT": so}, readonly_paths=[task, so],
                           hidden_paths=[scratch])
    # from here on this process is the sandboxed worker; report.missing says what the
    # host could not give, report.device is the device's name inside ("cuda:0").

`enter()` is called by a freshly forked, still single-threaded child (fork mode), or at
the start of a fresh interpreter (spawn mode); `python -m kforge_harness.sandbox run ...`
does the same around any command (the C++ compile stages run compilers through it).
README.md's "Threat model" says what this protects and what it does not. The file
system side (what is shown, the devices, the new root) is sandbox_fs.py; the system calls
are linux.py; the seccomp filter is seccomp.py.

Processes (the caller forked S from the server; S is what the server waits for and kills):

    server ── S  supervisor: stays outside, in the server's PID namespace and root.
              ├── R  PID 1 of the new PID namespace: `cat` on a pipe, SIGCHLD ignored.
              └── W  the worker (PID 2): enter() returns here, the candidate runs here.

When W ends, S kills R, and the kernel kills everything left in the namespace (a
double-forked, setsid() grandchild included); S then exits as W did (same code, or the
same signal), so the server's view of "the child" does not change. R and W die with S
(each by its parent-death signal; R also at the end of a pipe only S writes to), so killing S's
process group, as the server does at a timeout, ends everything.

What W gets, in this order (each step that the host refuses is recorded, never skipped
silently):
- namespaces: PID, network (no interfaces but a down loopback), IPC and UTS (from S),
  mount (W's own, so S and R keep the host's view), and a user namespace. As root, S
  creates the others in the initial user namespace, W builds its root as real root, then
  enters a new user namespace whose only uid/gid (0 inside) S maps to the unprivileged
  `uid` outside (65534): the candidate's user namespace owns none of its other namespaces,
  so even a capability regained there could not remount or re-network anything. As a
  non-root caller, S first creates a user namespace mapping 0 to the caller's own uid.
- a new root (pivot_root): read-only binds of /usr, /lib*, /bin, /sbin, parts of /sys, a short
  list of /etc files, the Python installation (prefixes, sys.path), the directories of
  every shared library this process has mapped, the ld.so.conf and LD_LIBRARY_PATH
  directories, CUDA_HOME/CUDA_PATH, and `readonly_paths`; the host mounts beneath them;
  a fresh /proc of the new PID namespace; a /dev with null, zero, full, random, urandom,
  a private /dev/shm, and for cuda:N only that GPU's node plus nvidiactl, nvidia-uvm,
  nvidia-uvm-tools (and nvidia-caps); `workdir` read-write at its own path, with /tmp and
  HOME inside it. Nothing else: not the server's scratch (the work dir's parent, with the
  other children's dirs and the reference store), not kforge's output directory or store,
  not the server's working directory. `hidden_paths` are masked by an empty directory
  even where a bind would otherwise show them.
- credentials: supplementary groups dropped, uid/gid 0 in the user namespace (`uid`
  outside), every capability dropped (effective, permitted, inheritable, ambient and the
  bounding set; SECBIT_NOROOT so an exec cannot regain any), no_new_privs.
- limits (`limits`): address space (CPU) or data segment (accelerators: CUDA reserves more
  address space than any sensible limit) of memory_mb on top of `memory_base`, CPU time,
  file size (SIGXFSZ/EFBIG beyond it: an output flood stops there), processes (counted per
  user namespace), open files, no core files.
- seccomp (seccomp.py): ptrace, process_vm_*, setns, unshare, namespace clone flags,
  mounts, bpf, perf, keyrings, modules, kexec, io_uring... denied on every thread (TSYNC).
- the environment: an allowlist (ENV_ALLOWED, ENV_ALLOWED_PREFIXES) of the caller's, plus
  HOME, TMPDIR, XDG_CACHE_HOME, TRITON_CACHE_DIR/TRITON_HOME and TORCH_EXTENSIONS_DIR in
  the work dir, TORCHINDUCTOR_COMPILE_THREADS=1, CUDA_VISIBLE_DEVICES for the given GPU, then `extra_env` (what a pipeline
  names). The variables dropped are also wiped from this process's inherited environment
  block, which /proc/self/environ would otherwise still show.
"""

import ctypes
import dataclasses
import errno
import json
import os
import resource
import shutil
import signal
import sys
import tempfile
import time

from kforge_harness.sandbox import linux, sandbox_fs, seccomp
from kforge_harness.devices import Device
from kforge_harness.sandbox.sandbox_fs import (load_view, prepare, save_view)  # noqa: F401 - part of this module's interface

# Protections enter() tries to give, by the name a report uses. The flag a job records for
# a missing one is "sandbox_no_<name>" (Report.flags()).
PROTECTIONS = {
    "user_namespace": "a user namespace of its own",
    "unprivileged_uid": "an unprivileged uid outside (not root)",
    "pid_namespace": "a PID namespace of its own: no other process visible, the whole "
                     "tree killed at the end",
    "mount_namespace": "a mount namespace of its own",
    "filesystem": "a new root: the system read-only, only the work dir writable, "
                  "nothing of kforge's outputs visible",
    "network_namespace": "a network namespace of its own: no network",
    "ipc_namespace": "an IPC namespace of its own",
    "uts_namespace": "a UTS namespace of its own (hostname)",
    "device_isolation": "only the given accelerator's device nodes",
    "capabilities": "every capability dropped, bounding set included",
    "no_new_privs": "no_new_privs: exec cannot gain privileges",
    "seccomp": "the seccomp filter (seccomp.py)",
}

SANDBOX_UID = 65534  # nobody: the uid a root caller's sandbox has outside
HOSTNAME = "kforge-sandbox"

# None leaves a limit as it is.
DEFAULT_LIMITS = {
    "memory_mb": None,
    "cpu_s": 300,
    "file_size_mb": 1024,  # the largest file the worker may write (outputs handed over)
    # Threads count as processes, and OpenMP starts one per core.
    "processes": max(256, 4 * (os.cpu_count() or 1) + 64),
    "open_files": 4096,
    "shm_mb": 256,         # the private /dev/shm
}

# The caller's variables a candidate may see (values are paths, locales, thread counts,
# toolchain selection: never credentials). Everything else needs `extra_env`.
ENV_ALLOWED = frozenset({
    "PATH", "LANG", "LANGUAGE", "TZ", "LD_LIBRARY_PATH", "PYTHONPATH", "CC", "CXX",
    "CUDAHOSTCXX", "CUDA_HOME", "CUDA_PATH", "CUDA_DEVICE_ORDER", "CUDA_MODULE_LOADING",
    # Replaced by the given GPU's when it is isolated; kept where it is not, or device
    # indices would shift.
    "CUDA_VISIBLE_DEVICES",
    "TORCH_CUDA_ARCH_LIST", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
    "PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED",
})
ENV_ALLOWED_PREFIXES = ("LC_", "TRITON_")

# The namespaces the supervisor creates (the worker's children are born in its PID one).
_SUPERVISOR_NAMESPACES = {"pid_namespace": linux.CLONE_NEWPID,
                          "network_namespace": linux.CLONE_NEWNET,
                          "ipc_namespace": linux.CLONE_NEWIPC,
                          "uts_namespace": linux.CLONE_NEWUTS}

# NOROOT (+locked): uid 0 gets no capabilities at exec; KEEP_CAPS locked off;
# NO_CAP_AMBIENT_RAISE (+locked).
_SECUREBITS = 0x01 | 0x02 | 0x20 | 0x40 | 0x80
_CAPABILITY_VERSION_3 = 0x20080522


def _cap_last_cap():
    try:
        with open("/proc/sys/kernel/cap_last_cap", encoding="ascii") as handle:
            return int(handle.read())
    except (OSError, ValueError):
        return 63


_CAP_LAST_CAP = _cap_last_cap()  # read in the server: a sandbox's /proc is its own


# PID 1 of the new PID namespace (R) only has to live as long as the supervisor and leave
# no zombies. `cat` reading the supervisor's end of a pipe does the first: it exits at EOF,
# when the supervisor is gone however it died (its parent-death signal cannot be set in a
# spawned program). The kernel does the second: R starts with SIGCHLD ignored, so whatever
# is orphaned to it is reaped as it exits. A program, not an interpreter: starting
# `python3 -I -S` for this took 40-60 ms of CPU per candidate on a loaded 2-core machine,
# `cat` 2-5 ms. Looked up once, in the server.
_REAPER = shutil.which("cat", path="/usr/bin:/bin")
# R dies with S (SIGKILL as its parent-death signal, set by util-linux's setpriv, which
# then executes cat): else, where S is killed while the candidate's cgroup is frozen
# (server/freezer.py), R could never run to see its pipe's end, and the PID namespace,
# with whatever the candidate left in it, would outlive the server. The death of R, the
# namespace's PID 1, kills the rest, frozen or not.
_SETPRIV = shutil.which("setpriv", path="/usr/bin:/bin")
_REAPER_ARGV = [_SETPRIV, "--pdeathsig", "KILL", _REAPER] if _SETPRIV else [_REAPER]


def _spawn_reaper(alive):
    """R, with `alive` (the pipe's read end) as its stdin and nothing else open."""
    actions = [(os.POSIX_SPAWN_DUP2, alive, 0),
               (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
               (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0)]
    for name in os.listdir("/proc/self/fd"):  # the caller's inheritable descriptors
        fd = int(name)
        if fd > 2 and fd != alive and _inheritable(fd):
            actions.append((os.POSIX_SPAWN_CLOSE, fd))
    actions.append((os.POSIX_SPAWN_CLOSE, alive))
    previous = signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # R inherits it through exec
    try:
        os.posix_spawn(_REAPER_ARGV[0], _REAPER_ARGV, {}, file_actions=actions)
    finally:
        # None: a handler Python did not install, which no caller of enter() has.
        signal.signal(signal.SIGCHLD, signal.SIG_DFL if previous is None else previous)


def _inheritable(fd):
    try:
        return os.get_inheritable(fd)
    except OSError:  # the descriptor listdir() itself had open
        return False


class SandboxError(Exception):
    """The sandbox could not be entered as asked: a protection in `required` is missing,
    or the caller broke the contract (threads running, a work dir that does not exist)."""


@dataclasses.dataclass
class Report:
    """What enter() achieved, for the job's record."""
    missing: list          # names from PROTECTIONS the host could not give
    reasons: dict          # missing name -> why (the errno text of the refused step)
    outside_uid: int       # the uid the worker has outside its namespaces
    device: str            # the device's name inside ("cuda:0" when isolated to one GPU)
    seconds: float         # wall time of enter(), measured in the worker

    def flags(self):
        """Per-job flags: sandbox_no_<protection> for each missing protection."""
        return [f"sandbox_no_{name}" for name in self.missing]

    def to_json(self):
        return json.dumps(dataclasses.asdict(self), sort_keys=True)


# ---- small helpers ----

def _write_file(path, text):
    with open(path, "w", encoding="ascii") as handle:
        handle.write(text)


def _describe(exc):
    return f"{type(exc).__name__}: {exc}"


# ---- the environment ----

def sandbox_environment(workdir, device_env=None, extra_env=None):
    """The environment a sandboxed worker gets (see the module docstring)."""
    env = {name: value for name, value in os.environ.items()
           if name in ENV_ALLOWED or name.startswith(ENV_ALLOWED_PREFIXES)}
    home = os.path.join(workdir, "home")
    env.update({
        "HOME": home,
        "TMPDIR": os.path.join(workdir, "tmp"),
        "XDG_CACHE_HOME": os.path.join(home, ".cache"),
        "TRITON_HOME": home,
        "TRITON_CACHE_DIR": os.path.join(home, ".triton", "cache"),
        "TORCH_EXTENSIONS_DIR": os.path.join(workdir, "torch_extensions"),
        # torch.compile's inductor compiles its kernels in this process, not in a pool
        # of Python workers it would start (the runtime guard allows no program but the
        # language's tool chain).
        "TORCHINDUCTOR_COMPILE_THREADS": "1",
        "PATH": env.get("PATH") or "/usr/local/bin:/usr/bin:/bin",
    })
    env.update(device_env or {})
    env.update(extra_env or {})
    return env


def _apply_environment(env):
    os.environ.clear()
    os.environ.update(env)
    tempfile.tempdir = None  # tempfile caches the directory it found first


def _wipe_inherited_environment(keep):
    """Zeroes the variables not in `keep` in the environment block this process was
    exec'd with: /proc/self/environ reads that memory, not os.environ, so a server's
    variables would otherwise stay readable in every forked child."""
    with open("/proc/self/stat", "rb") as handle:
        fields = handle.read().rsplit(b")", 1)[1].split()
    # env_start and env_end are fields 50 and 51 of proc(5); the split starts at field 3.
    start, end = int(fields[50 - 3]), int(fields[51 - 3])
    if not 0 < start < end:
        return
    block = ctypes.string_at(start, end - start)
    offset = 0
    for entry in block.split(b"\0"):
        name = entry.split(b"=", 1)[0].decode("utf-8", "surrogateescape")
        if entry and name not in keep:
            ctypes.memset(start + offset, 0, len(entry))
        offset += len(entry) + 1


# ---- credentials ----

def _limit_capabilities():
    """What no exec may ever give back: the bounding and ambient sets emptied, uid 0
    gets nothing at exec (SECBIT_NOROOT). Needs CAP_SETPCAP, so it comes before a uid
    change drops that."""
    linux.prctl(linux.PR_SET_SECUREBITS, _SECUREBITS)
    for cap in range(_CAP_LAST_CAP + 1):
        if linux.libc.prctl(linux.PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and \
                ctypes.get_errno() != errno.EINVAL:
            linux.fail(f"drop capability {cap} from the bounding set")
    linux.prctl(linux.PR_CAP_AMBIENT, linux.PR_CAP_AMBIENT_CLEAR_ALL)


def _holds_capabilities():
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(("CapPrm:", "CapEff:", "CapAmb:")) and int(line.split()[1], 16):
                return True
    return False


def _clear_capabilities():
    header = (ctypes.c_uint32 * 2)(_CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()  # two of {effective, permitted, inheritable}, all zero
    linux.syscall("capset", header, data)


def _die_with_parent():
    linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)


# ---- the supervisor ----

class _Missing:
    """The protections found missing so far, with the reason for each."""

    def __init__(self):
        self.names = []
        self.reasons = {}

    def add(self, name, why):
        if name not in self.names:
            self.names.append(name)
            self.reasons[name] = why if isinstance(why, str) else _describe(why)

    def __contains__(self, name):
        return name in self.names

    def require(self, required):
        lacking = [name for name in required if name in self.names]
        if lacking:
            raise SandboxError("the sandbox lacks " + ", ".join(
                f"{name} ({self.reasons[name]})" for name in lacking))


def _unshare_together(names, missing):
    """Unshares the namespaces of `names` at once, else one by one; records refusals.
    Returns how many it got."""
    flags = 0
    for name in names:
        flags |= _SUPERVISOR_NAMESPACES[name]
    try:
        linux.unshare(flags)
        return len(names)
    except OSError:
        pass
    got = 0
    for name in names:
        try:
            linux.unshare(_SUPERVISOR_NAMESPACES[name])
            got += 1
        except OSError as exc:
            missing.add(name, exc)
    return got


def _write_id_maps(pid, uid, gid):
    _write_file(f"/proc/{pid}/setgroups", "deny")
    _write_file(f"/proc/{pid}/uid_map", f"0 {uid} 1\n")
    _write_file(f"/proc/{pid}/gid_map", f"0 {gid} 1\n")


def _thread_count():
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 1


def _prepare_workdir(workdir, owner):
    for sub in ("tmp", "home", sandbox_fs.STAGING_DIR):
        os.makedirs(os.path.join(workdir, sub), exist_ok=True)
    # Inside, /tmp is the work dir's tmp/; a work dir under the host's /tmp (the default
    # scratch) then needs its mount point at its own path inside that.
    if sandbox_fs.under(workdir, "/tmp") and workdir != "/tmp":
        os.makedirs(os.path.join(workdir, "tmp", os.path.relpath(workdir, "/tmp")),
                    exist_ok=True)
    if owner is not None:
        for root, dirs, files in os.walk(workdir):
            for name in [root] + [os.path.join(root, n) for n in dirs + files]:
                os.lchown(name, owner, owner)


def _untraversable_by(path, uid):
    """The first directory on the way to `path` that `uid` (and its same-numbered group)
    may not search, or None."""
    current = "/"
    for part in [p for p in path.split("/") if p]:
        info = os.stat(current)
        bits = 0o100 if info.st_uid == uid else 0o010 if info.st_gid == uid else 0o001
        if not info.st_mode & bits:
            return current
        current = os.path.join(current, part)
    return None


def _children():
    found = []
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/children", encoding="ascii") as handle:
                found += [int(pid) for pid in handle.read().split()]
        except OSError:
            pass
    return found


def _supervise(worker):
    """S after the fork: wait for the worker, end everything, exit as the worker did."""
    status = None
    while status is None:
        try:
            pid, wait_status = os.waitpid(-1, 0)
        except ChildProcessError:
            os._exit(70)
        except InterruptedError:
            continue
        if pid == worker:
            status = wait_status
    # S's children: the reaper (PID 1: once it is gone, the kernel ends everything in its
    # namespace) and, without a PID namespace, whatever was orphaned to S (a subreaper).
    while True:
        for pid in _children():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            break
        except InterruptedError:
            continue
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(sig, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {sig})
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)
    os._exit(os.waitstatus_to_exitcode(status))


# How the worker gets its user namespace: "late" (a root caller: S creates the other
# namespaces as root, W builds its root as root and then enters a user namespace that S
# maps to `uid`), "early" (S creates a user namespace first, mapping 0 to its own uid,
# and everything else inside it), "none" (no user namespace to be had).
_LATE, _EARLY, _NONE = "late", "early", "none"


def enter(workdir, device="cpu", limits=None, extra_env=None, readonly_paths=(),
          hidden_paths=(), memory_base=0, required=(), uid=SANDBOX_UID):
    """Turns the calling process into a sandboxed worker; returns a Report in the worker.

    Contract (what the harness relies on):
    - Call it in a process that runs nothing else yet: single-threaded (a fresh fork of
      the server, or a fresh interpreter), in a process group of its own. The call forks:
      the calling process becomes the supervisor and never returns from here (it exits
      with the worker's exit code, or dies of the worker's signal, once everything the
      worker started is dead); enter() returns in the worker only. Descriptors are
      inherited as they are (the result pipe, the log).
    - `workdir`: an existing absolute directory, the only writable place, at the same path
      inside; tmp/ and home/ are created in it (and, as root, everything in it is chowned
      to `uid`, so the worker can write). Its parent directory is never visible.
    - `device`: "cpu", "cuda:N", "npu:N" (or a devices.Device). Use report.device inside:
      a GPU isolated by its device node is "cuda:0" there.
    - `limits`: keys of DEFAULT_LIMITS (missing keys take those defaults; None leaves a
      limit as it is): memory_mb (on top of `memory_base` bytes, the server's own usage:
      address space on CPU, data segment on accelerators), cpu_s, file_size_mb,
      processes, open_files, shm_mb. A limit can only be lowered later: a standby child
      that enters before its request is known passes None for the request's own limits
      and calls apply_rlimits() with them when the request comes.
    - `extra_env`: variables a pipeline names, set last. `readonly_paths`: files or
      directories shown read-only at their own paths (the task file, an artifact).
      `hidden_paths`: directories masked even where a read-only bind would show them
      (the server's scratch, kforge's output directory).
    - `required`: names from PROTECTIONS that must hold; if one is missing, SandboxError
      is raised (in the caller when that is known before the fork, else in the worker)
      instead of running unprotected. What is missing but not required is in
      report.missing and report.flags(): say it once per run, record it per job.
    - The worker keeps the caller's Python state (imports, sys.path); os.environ becomes
      sandbox_environment(...), the cwd `workdir`.
    """
    started = time.monotonic()
    device = device if isinstance(device, Device) else Device(getattr(device, "name", device))
    workdir = os.path.realpath(workdir)
    if not os.path.isdir(workdir):
        raise SandboxError(f"the work dir {workdir} does not exist")
    threads = _thread_count()
    if threads > 1:
        raise SandboxError(f"enter() needs a single-threaded process; this one runs {threads} "
                           "threads (call it right after fork, before torch starts any)")
    limits = {**DEFAULT_LIMITS, **(limits or {})}
    view = prepare()
    devices = sandbox_fs.device_plan(device)
    links, explicit = [], []
    for path in readonly_paths:
        real = sandbox_fs.resolve(os.path.abspath(path), links)
        if not os.path.exists(real):
            raise SandboxError(f"read-only path {path} does not exist")
        explicit.append(real)
    hidden = sorted({os.path.realpath(p) for p in hidden_paths} | {os.path.dirname(workdir)})
    missing = _Missing()
    if not devices.isolated:
        missing.add("device_isolation", f"which device node is {device.name} cannot be told "
                                        "without initialising the device")

    euid, egid, parent = os.geteuid(), os.getegid(), os.getppid()
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # S re-raises a worker's SIGSEGV
    linux.prctl(linux.PR_SET_CHILD_SUBREAPER, 1)
    names = list(_SUPERVISOR_NAMESPACES)
    if _REAPER is None:
        names.remove("pid_namespace")
        missing.add("pid_namespace", "no `cat` in /usr/bin or /bin to be its PID 1")
    mode = _NONE
    if euid == 0 and _unshare_together(names, _Missing()) == len(names):
        mode = _LATE
    else:
        try:
            linux.unshare(linux.CLONE_NEWUSER)
            _write_id_maps("self", euid, egid)
            mode = _EARLY
        except OSError as exc:
            missing.add("user_namespace", exc)
        _unshare_together(names, missing)
        # New credentials cleared the parent-death signal the server armed.
        _die_with_parent()
        if os.getppid() != parent:
            os._exit(1)
    # A root caller's worker ends up as `uid` outside, unless only its own uid could be
    # mapped (a user namespace made without privileges), or, with no namespace at all,
    # the work dir's host path is closed to `uid`: then it stays root, rather than not
    # working at all.
    drop_to_uid = uid if euid == 0 and mode != _EARLY else None
    if mode == _EARLY and euid == 0:
        missing.add("unprivileged_uid", "root without CAP_SYS_ADMIN: its user namespace "
                                        "maps uid 0 to itself")
    elif mode == _NONE and drop_to_uid is not None:
        blocked = _untraversable_by(workdir, uid)
        if blocked:
            missing.add("unprivileged_uid", f"{blocked} is not traversable by uid {uid} and "
                                            "there is no mount namespace")
            drop_to_uid = None
    _prepare_workdir(workdir, drop_to_uid)
    missing.require(required)

    plan = sandbox_fs.RootPlan(view, workdir, explicit, links, hidden, devices,
                               int(limits["shm_mb"]))
    env = sandbox_environment(workdir, devices.env, extra_env)
    alive_r, alive_w = os.pipe()  # S holds the write end: R sees S die
    if "pid_namespace" not in missing:
        # PID 1 must exist before the worker is born into the namespace.
        _spawn_reaper(alive_r)
    to_supervisor_r, to_supervisor_w = os.pipe2(os.O_CLOEXEC)
    to_worker_r, to_worker_w = os.pipe2(os.O_CLOEXEC)
    sys.stdout.flush()
    sys.stderr.flush()
    worker = os.fork()
    if worker != 0:
        for fd in (alive_r, to_supervisor_w, to_worker_r):
            os.close(fd)
        if mode == _LATE:
            _map_when_asked(worker, uid, to_supervisor_r, to_worker_w)
        os.close(to_supervisor_r)
        os.close(to_worker_w)
        _supervise(worker)  # never returns

    for fd in (alive_r, alive_w, to_supervisor_r, to_worker_w):
        os.close(fd)
    try:
        drop_to_uid = _become_worker(plan, missing, mode, drop_to_uid, limits, device,
                                     memory_base, to_supervisor_w, to_worker_r)
    finally:
        os.close(to_supervisor_w)
        os.close(to_worker_r)
    missing.require(required)
    _apply_environment(env)
    _wipe_inherited_environment(set(env))
    os.chdir(workdir)
    outside_uid = euid if drop_to_uid is None else drop_to_uid
    return Report(missing.names, missing.reasons, outside_uid, devices.inside_name,
                  time.monotonic() - started)


def probe(device="cpu", scratch=None):
    """What enter() would give on this host, found by entering a sandbox in a throwaway
    child (about what one candidate's sandbox costs): the server calls it once at start
    to say, once per run, which protections are missing. Returns a Report; raises
    SandboxError when even the probe failed."""
    workdir = tempfile.mkdtemp(prefix="kforge-sandbox-probe-", dir=scratch)
    read_fd, write_fd = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_fd)
            os.setsid()
            report = enter(workdir, device)
            os.write(write_fd, report.to_json().encode())
        except BaseException as exc:  # noqa: BLE001 - the parent reports it
            os.write(write_fd, json.dumps({"error": _describe(exc)}).encode())
        finally:
            os._exit(0)
    os.close(write_fd)
    chunks = []
    while chunk := os.read(read_fd, 65536):
        chunks.append(chunk)
    os.close(read_fd)
    os.waitpid(pid, 0)
    shutil.rmtree(workdir, ignore_errors=True)
    answer = json.loads(b"".join(chunks) or b'{"error": "the probe child died"}')
    if "error" in answer:
        raise SandboxError(f"cannot enter a sandbox on this host: {answer['error']}")
    return Report(**answer)


def _map_when_asked(worker, uid, from_worker, to_worker):
    """S's half of the late user namespace: W says it has unshared, S writes its maps."""
    if os.read(from_worker, 1) != b"u":
        return  # W could not create one (it records that), or it died
    try:
        _write_id_maps(worker, uid, uid)
        os.write(to_worker, b"m")
    except OSError as exc:
        os.write(to_worker, b"!" + _describe(exc).encode()[:200])


def _become_worker(plan, missing, mode, drop_to_uid, limits, device, memory_base,
                   to_supervisor, from_supervisor):
    """W: its mount namespace and root, then credentials, limits, seccomp. Returns the
    uid it dropped to (None: it did not)."""
    try:
        linux.unshare(linux.CLONE_NEWNS)
    except OSError as exc:
        missing.add("mount_namespace", exc)
        missing.add("filesystem", "no mount namespace")
    else:
        try:
            sandbox_fs.build_root(plan)
        except OSError as exc:
            missing.add("filesystem", exc)
    if "filesystem" in missing and device.is_accelerator:
        missing.add("device_isolation", "no new root: every device node stays visible")
    if "uts_namespace" not in missing:
        try:
            linux.sethostname(HOSTNAME)
        except OSError as exc:
            missing.add("uts_namespace", exc)

    if mode == _LATE:
        os.setgroups([])
        try:
            linux.unshare(linux.CLONE_NEWUSER)
        except OSError as exc:
            os.write(to_supervisor, b"x")
            missing.add("user_namespace", exc)
            mode = _NONE  # still dropped to drop_to_uid below
        else:
            os.write(to_supervisor, b"u")
            answer = os.read(from_supervisor, 256)
            if answer != b"m":
                raise SandboxError("the supervisor could not map the worker's user namespace: "
                                   + answer[1:].decode(errors="replace"))
            os.setresgid(0, 0, 0)  # 0 inside is `uid` outside
            os.setresuid(0, 0, 0)
    # A user namespace hands out a full bounding set: it is emptied after entering one,
    # and before leaving uid 0 of the initial namespace (which takes CAP_SETPCAP along).
    try:
        _limit_capabilities()
    except OSError as exc:
        # Refused to a process that holds no capability to begin with (a non-root caller
        # without a user namespace), it costs nothing: no_new_privs keeps any from coming.
        if _holds_capabilities():
            missing.add("capabilities", exc)
    if mode == _NONE and drop_to_uid is not None and _untraversable_by(plan.workdir, drop_to_uid):
        # No user namespace after all (a chroot refuses it), and the work dir's path as
        # this process sees it (the host's, where no new root could be made) is closed
        # to `uid`: it stays root, rather than not working at all, and takes back the
        # work dir chowned to `uid` for it (its capabilities go below: it is only the
        # owner then).
        missing.add("unprivileged_uid", f"{_untraversable_by(plan.workdir, drop_to_uid)} is not "
                                        f"traversable by uid {drop_to_uid} and there is no "
                                        "user namespace")
        drop_to_uid = None
        _prepare_workdir(plan.workdir, os.geteuid())
    if mode == _NONE and drop_to_uid is not None:
        try:
            os.setgroups([])
            os.setresgid(drop_to_uid, drop_to_uid, drop_to_uid)
            os.setresuid(drop_to_uid, drop_to_uid, drop_to_uid)
        except OSError as exc:
            missing.add("unprivileged_uid", exc)
            drop_to_uid = None
    try:
        _clear_capabilities()
    except OSError as exc:
        missing.add("capabilities", exc)
    # Changing credentials cleared both: the worker must die with its supervisor, and
    # stay readable to itself through /proc/self.
    _die_with_parent()
    linux.prctl(linux.PR_SET_DUMPABLE, 1)
    # The task host reads a timed call's outputs out of this process (handover/read.py);
    # under Yama only an ancestor could, and the host is not one. Nothing in a sandbox
    # can use it: seccomp denies ptrace and process_vm_* to every candidate.
    try:
        linux.prctl(linux.PR_SET_PTRACER, linux.PR_SET_PTRACER_ANY)
    except OSError:
        pass  # EINVAL: no Yama, nothing to allow
    try:
        linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1)
    except OSError as exc:
        missing.add("no_new_privs", exc)
    apply_rlimits(limits, device, memory_base)
    try:
        seccomp.install()
    except (OSError, RuntimeError) as exc:
        missing.add("seccomp", exc)
    return drop_to_uid


def _set_limit(kind, soft, hard=None):
    _, current_hard = resource.getrlimit(kind)
    hard = soft if hard is None else hard
    if current_hard != resource.RLIM_INFINITY:
        soft, hard = min(soft, current_hard), min(hard, current_hard)
    resource.setrlimit(kind, (soft, hard))


RLIMIT_DATA = resource.RLIMIT_DATA


def memory_limit_kind(device):
    """RLIMIT_AS on the CPU, where it is exact; RLIMIT_DATA (private writable memory) on
    accelerators, whose runtimes reserve huge virtual ranges at initialisation, more than
    any sensible address-space limit."""
    return resource.RLIMIT_DATA if device.is_accelerator else resource.RLIMIT_AS


def apply_rlimits(limits, device, memory_base=0):
    """The resource limits of a sandboxed worker (keys of DEFAULT_LIMITS)."""
    limits = {**DEFAULT_LIMITS, **limits}
    _set_limit(resource.RLIMIT_CORE, 0)  # a crashing kernel writes no multi-GB core file
    if limits["memory_mb"] is not None:
        _set_limit(memory_limit_kind(device), memory_base + int(limits["memory_mb"]) * 1024 * 1024)
    if limits["cpu_s"] is not None:
        cpu_s = int(limits["cpu_s"])
        _set_limit(resource.RLIMIT_CPU, cpu_s, cpu_s + 1)  # SIGXCPU, SIGKILL a second later
    if limits["file_size_mb"] is not None:
        _set_limit(resource.RLIMIT_FSIZE, int(limits["file_size_mb"]) * 1024 * 1024)
    if limits["processes"] is not None:
        _set_limit(resource.RLIMIT_NPROC, int(limits["processes"]))
    if limits["open_files"] is not None:
        _set_limit(resource.RLIMIT_NOFILE, int(limits["open_files"]))


# ---- python -m kforge_harness.sandbox run ... ----

def _parse_pairs(pairs, what):
    parsed = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise SystemExit(f"kforge-sandbox: {what} must be NAME=VALUE, got {pair!r}")
        parsed[name] = value
    return parsed


def _in_chroot():
    """Whether this process runs in a chroot: its root is not that of PID 1 in the same
    mount namespace. A chroot forbids user namespaces (the kernel refuses them to a
    chrooted process). None when it cannot be told (another mount namespace, no /proc)."""
    try:
        if os.stat("/proc/self/ns/mnt").st_ino != os.stat("/proc/1/ns/mnt").st_ino:
            return None
        ours, init = os.stat("/"), os.stat("/proc/1/root/")
    except OSError:
        return None
    return (ours.st_dev, ours.st_ino) != (init.st_dev, init.st_ino)


def _probe_command(device, as_json):
    """`probe`: what a sandbox gets on this host (probe()), and whether this process is in
    a chroot. Exits 0 with the Report, or 125 with "error" when no sandbox could be entered
    at all. kforge's evaluation stages ask this once per run, before the first job."""
    answer = {"chroot": _in_chroot()}
    try:
        answer.update(dataclasses.asdict(probe(device)))
    except (OSError, SandboxError) as exc:
        answer["error"] = _describe(exc)
    if as_json:
        sys.stdout.write(json.dumps(answer, sort_keys=True) + "\n")
    elif "error" in answer:
        sys.stdout.write(f"no sandbox can be entered on this host: {answer['error']}\n")
    elif not answer["missing"]:
        sys.stdout.write("the sandbox is complete on this host\n")
    else:
        for name in answer["missing"]:
            sys.stdout.write(f"missing {name}: {PROTECTIONS[name]} ({answer['reasons'][name]})\n")
    sys.stdout.flush()
    return 125 if "error" in answer else 0


def main(argv=None):
    """Runs a command in a sandbox: `run --workdir DIR [--ro PATH]... [--env NAME=VALUE]...
    [--limit NAME=VALUE]... -- PROGRAM ARGS...`. The first line on stdout is
    `kforge-sandbox: {report as JSON}`, written before PROGRAM starts; the exit status is
    PROGRAM's (its signal re-raised), 125 when the sandbox itself failed.
    `probe [--device D] [--json]`: what a sandbox gets on this host (_probe_command)."""
    import argparse
    parser = argparse.ArgumentParser(prog="python -m kforge_harness.sandbox")
    commands = parser.add_subparsers(dest="command", required=True)
    probe_parser = commands.add_parser("probe", help="what a sandbox gets on this host")
    probe_parser.add_argument("--device", default="cpu")
    probe_parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    run = commands.add_parser("run", help="run a command in a sandbox")
    run.add_argument("--workdir", required=True)
    run.add_argument("--device", default="cpu")
    run.add_argument("--ro", action="append", default=[], help="a read-only path")
    run.add_argument("--hide", action="append", default=[], help="a path never shown")
    run.add_argument("--env", action="append", default=[], help="NAME=VALUE")
    run.add_argument("--limit", action="append", default=[], help="NAME=VALUE (DEFAULT_LIMITS)")
    run.add_argument("program", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if args.command == "probe":
        sys.exit(_probe_command(args.device, args.json))
    program = args.program[1:] if args.program[:1] == ["--"] else args.program
    if not program:
        parser.error("no program to run")
    limits = {name: (None if value == "none" else float(value))
              for name, value in _parse_pairs(args.limit, "--limit").items()}
    try:
        report = enter(args.workdir, args.device, limits, _parse_pairs(args.env, "--env"),
                       args.ro, args.hide)
        executable = program[0] if "/" in program[0] else \
            _which(program[0], os.environ.get("PATH", ""))
        sys.stdout.write("kforge-sandbox: " + report.to_json() + "\n")
        sys.stdout.flush()
        os.execve(executable, program, dict(os.environ))
    except (OSError, SandboxError) as exc:
        sys.stderr.write(f"kforge-sandbox: error: {_describe(exc)}\n")
        sys.stderr.flush()
        os._exit(125)


def _which(name, path):
    for directory in path.split(":"):
        candidate = os.path.join(directory or ".", name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    raise OSError(errno.ENOENT, f"{name} not found on PATH={path}")

