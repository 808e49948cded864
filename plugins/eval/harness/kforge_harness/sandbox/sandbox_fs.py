"""What a sandbox shows and how its new root is built: the host's read-only parts (worked
out once per process, in the server), the device nodes of the given accelerator, the
mounts, and the pivot into the new root. sandbox.py decides when; this module only knows
the file system."""

import dataclasses
import errno
import glob
import json
import os
import shutil
import sys

from kforge_harness import HARNESS_DIR
from kforge_harness.sandbox import linux
from kforge_harness.sandbox.linux import (MS_BIND, MS_NOATIME, MS_NODEV, MS_NODIRATIME, MS_NOEXEC,
                                          MS_NOSUID, MS_PRIVATE, MS_RDONLY, MS_REC, MS_RELATIME,
                                          MS_REMOUNT)


# /etc entries that programs need (user names, the dynamic loader's cache, time zone,
# alternatives such as cc -> gcc); the rest of /etc (credentials, keys, configs) stays out.
ETC_ALLOWED = ("passwd", "group", "nsswitch.conf", "hosts", "localtime", "timezone",
               "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "os-release")
# /sys only where no other file system is mounted (cgroups, debugfs, tracing stay out):
# the CPU topology torch reads, the PCI and NUMA facts CUDA reads, modules' versions.
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/sys/devices",
               "/sys/bus", "/sys/class", "/sys/dev", "/sys/module", "/sys/kernel/mm")
PSEUDO_FILESYSTEMS = ("/proc", "/sys", "/dev")
DEV_NODES = ("null", "zero", "full", "random", "urandom")
NVIDIA_SHARED_NODES = ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools")
ASCEND_SHARED_NODES = ("davinci_manager", "devmm_svm", "hisi_hdc")
# statvfs flag -> mount flag: a bind remount inside a user namespace must repeat the flags
# the kernel locked on the source mount, or it is refused.
_LOCKED_FLAGS = ((os.ST_NOSUID, MS_NOSUID), (os.ST_NODEV, MS_NODEV),
                 (os.ST_NOEXEC, MS_NOEXEC), (os.ST_NOATIME, MS_NOATIME),
                 (os.ST_NODIRATIME, MS_NODIRATIME), (os.ST_RELATIME, MS_RELATIME))
STAGING_DIR = ".sandbox-root"  # in the work dir: where the new root is assembled


# ---- what the sandbox shows: worked out once, in the server, before any fork ----

@dataclasses.dataclass
class HostView:
    readonly: list      # real paths to bind read-only (recursively)
    mount_points: list  # the host's: those beneath a read-only path are made read-only
    links: list         # (path, target): symlinks to recreate so those paths resolve


_host_view = None


def prepare():
    """Works out, once per process, what every sandbox shows read-only: the system
    directories, the Python installation and every shared library this process has
    mapped. Call it in the server after its imports (torch, triton), so forked children
    inherit the answer (working it out costs a child tens of ms); enter() calls it when
    nobody did."""
    global _host_view
    if _host_view is None:
        _host_view = _discover_host()
    return _host_view


def save_view(path):
    """Writes prepare()'s answer to `path` (JSON), for load_view() in a process that must
    not make its own: a spawned child enters its sandbox before it imports torch, so its
    own mapped libraries would not show what torch needs once imported inside."""
    view = prepare()
    with open(path, "w", encoding="utf-8") as handle:
        json.dump({"readonly": view.readonly, "mount_points": view.mount_points,
                   "links": view.links}, handle)


def load_view(path):
    """Takes save_view()'s answer as this process's prepare()."""
    global _host_view
    with open(path, encoding="utf-8") as handle:
        saved = json.load(handle)
    _host_view = HostView(saved["readonly"], saved["mount_points"],
                          [tuple(link) for link in saved["links"]])
    return _host_view


def _python_paths():
    cwd = os.getcwd()
    paths = {sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix,
             os.path.dirname(os.path.realpath(sys.executable))}
    for entry in sys.path:
        # sys.path[0] of `python -m` is the caller's working directory: never shown.
        if entry and os.path.isabs(entry) and os.path.realpath(entry) != os.path.realpath(cwd):
            paths.add(entry)
    return paths


def _mapped_library_dirs():
    dirs = set()
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            for line in maps:
                fields = line.split(None, 5)
                if len(fields) == 6 and fields[5].startswith("/") and \
                        not fields[5].startswith(("/dev/", "/proc/", "/memfd:")):
                    dirs.add(os.path.dirname(fields[5].rstrip("\n").replace(" (deleted)", "")))
    except OSError:
        pass
    return dirs


def _ld_so_conf_dirs(path="/etc/ld.so.conf", depth=0):
    dirs = set()
    try:
        with open(path, encoding="utf-8", errors="replace") as conf:
            lines = [line.split("#", 1)[0].strip() for line in conf]
    except OSError:
        return dirs
    for line in lines:
        if line.startswith("include") and depth < 4:
            for pattern in line.split()[1:]:
                for included in glob.glob(pattern):
                    dirs |= _ld_so_conf_dirs(included, depth + 1)
        elif line.startswith("/"):
            dirs.add(line)
    return dirs


def _toolchain_paths():
    paths = set()
    for name in ("LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH"):
        paths |= {p for p in os.environ.get(name, "").split(":") if os.path.isabs(p)}
    # Toolchain variables naming files (TRITON_PTXAS_PATH, CC=/opt/gcc/bin/gcc, ...).
    for name, value in os.environ.items():
        if (name in ("CC", "CXX", "CUDAHOSTCXX") or name.startswith("TRITON_")) \
                and os.path.isabs(value):
            paths.add(value)
    # A compiler outside /usr runs programs and reads headers of its own installation
    # (gcc: libexec/gcc/.../cc1, include, lib): its whole prefix, not just the driver.
    # Triton's launcher and load_inline's builds call it inside the candidate's sandbox.
    compilers = [os.environ.get(name) for name in ("CC", "CXX", "CUDAHOSTCXX")]
    compilers += [shutil.which(name) for name in ("cc", "gcc", "c++", "g++")]
    for compiler in compilers:
        if compiler and os.path.isabs(compiler):
            real = os.path.realpath(compiler)
            if os.path.basename(os.path.dirname(real)) == "bin":
                prefix = os.path.dirname(os.path.dirname(real))
                if prefix not in ("/", "/usr"):
                    paths.add(prefix)
    return paths


def resolve(path, links):
    """The real path of `path`; appends (link, target) for every symlink crossed, so the
    sandbox can recreate them and the path resolves inside as it does outside."""
    parts = [p for p in path.split("/") if p]
    current = "/"
    hops = 0
    while parts:
        name = parts.pop(0)
        if name == ".":
            continue
        if name == "..":
            current = os.path.dirname(current)
            continue
        candidate = os.path.join(current, name)
        if os.path.islink(candidate):
            hops += 1
            if hops > 40:
                raise OSError(errno.ELOOP, f"too many symlinks resolving {path}")
            target = os.readlink(candidate)
            links.append((candidate, target))
            if target.startswith("/"):
                current = "/"
            parts = [p for p in target.split("/") if p] + parts
        else:
            current = candidate
    return current


def under(path, parent):
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def _host_mount_points():
    points = []
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as info:
            for line in info:
                point = line.split()[4].replace("\\040", " ")
                points.append(point)
    except OSError:
        pass
    return points


def _minimal_cover(paths):
    """Drops paths inside another kept directory (a bind of the parent shows them)."""
    kept = []
    for path in sorted(paths):
        if not any(under(path, parent) and os.path.isdir(parent) for parent in kept):
            kept.append(path)
    return kept


def _discover_host():
    wanted = set(SYSTEM_DIRS) | {os.path.join("/etc", name) for name in ETC_ALLOWED}
    wanted.add(HARNESS_DIR)  # lazily imported harness modules, kforge_cpp
    wanted |= _python_paths() | _mapped_library_dirs() | _ld_so_conf_dirs()
    wanted |= _toolchain_paths()
    links = []
    real = set()
    for path in wanted:
        if not os.path.lexists(path):
            continue
        try:
            resolved = resolve(os.path.abspath(path), links)
        except OSError:
            continue
        if os.path.exists(resolved):
            real.add(resolved)
    points = [p for p in _host_mount_points()
              if not any(under(p, pseudo) for pseudo in PSEUDO_FILESYSTEMS)]
    return HostView(_minimal_cover(real), points, sorted(set(links)))




# ---- devices ----

def nvidia_gpus():
    """(bus id, minor, uuid, model) of every NVIDIA GPU, in PCI bus order."""
    gpus = []
    for info in sorted(glob.glob("/proc/driver/nvidia/gpus/*/information")):
        fields = {}
        try:
            with open(info, encoding="utf-8", errors="replace") as handle:
                for line in handle:
                    key, _, value = line.partition(":")
                    fields[key.strip()] = value.strip()
        except OSError:
            continue
        if fields.get("Device Minor", "").isdigit():
            gpus.append((os.path.basename(os.path.dirname(info)), int(fields["Device Minor"]),
                         fields.get("GPU UUID", ""), fields.get("Model", "")))
    return gpus


def _nvidia_gpu_for(index):
    """The GPU that CUDA calls device `index` in this environment, or None when that
    cannot be told without initialising CUDA (which the server must never do)."""
    gpus = nvidia_gpus()
    order = os.environ.get("CUDA_DEVICE_ORDER", "FASTEST_FIRST")
    # FASTEST_FIRST sorts by speed, ties in PCI order: PCI order when all GPUs are alike.
    pci_order_known = order == "PCI_BUS_ID" or len({gpu[3] for gpu in gpus}) <= 1
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    entries = [e.strip() for e in visible.split(",")] if visible is not None else None
    if entries is not None:
        if index >= len(entries):
            return None
        entry = entries[index]
        if entry.startswith("GPU-"):
            matches = [gpu for gpu in gpus if gpu[2].startswith(entry)]
            return matches[0] if len(matches) == 1 else None
        if not entry.isdigit():
            return None  # MIG instances and other forms: not mapped here
        index = int(entry)
    if not pci_order_known or index >= len(gpus):
        return None
    return gpus[index]


@dataclasses.dataclass
class DevicePlan:
    nodes: list          # names under /dev to bind
    dirs: list           # directories under /dev to bind (nvidia-caps)
    inside_name: str
    env: dict
    isolated: bool


def device_plan(device):
    nodes = list(DEV_NODES)
    if device.type == "cpu":
        return DevicePlan(nodes, [], device.name, {}, True)
    if device.type == "cuda":
        gpu = _nvidia_gpu_for(device.index)
        shared = [n for n in NVIDIA_SHARED_NODES if os.path.exists(f"/dev/{n}")]
        dirs = ["nvidia-caps"] if os.path.isdir("/dev/nvidia-caps") else []
        if gpu is None or not gpu[2].startswith("GPU-"):
            every = sorted(os.path.basename(p) for p in glob.glob("/dev/nvidia[0-9]*"))
            return DevicePlan(nodes + shared + every, dirs, device.name, {}, False)
        return DevicePlan(nodes + shared + [f"nvidia{gpu[1]}"], dirs, "cuda:0",
                           {"CUDA_VISIBLE_DEVICES": gpu[2]}, True)
    # Ascend: which davinci node is which logical device is not known here (untested
    # hardware): every NPU stays visible and the report says so.
    every = sorted(os.path.basename(p) for p in glob.glob("/dev/davinci[0-9]*"))
    shared = [n for n in ASCEND_SHARED_NODES if os.path.exists(f"/dev/{n}")]
    return DevicePlan(nodes + shared + every, [], device.name, {}, False)




# ---- the new root ----

def _remount_flags(path, flags):
    try:
        current = os.statvfs(path).f_flag
    except OSError:
        return flags
    for statvfs_flag, mount_flag in _LOCKED_FLAGS:
        if current & statvfs_flag:
            flags |= mount_flag
    return flags


def _make_node(path, is_dir):
    os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
    if is_dir:
        os.makedirs(path, mode=0o755, exist_ok=True)
    elif not os.path.lexists(path):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o644))


def _bind(new_root, path, writable=False, extra_flags=0, inside=None, recursive=False):
    """Binds the host's `path` at `inside` (default: the same path) in new_root;
    read-only unless `writable`."""
    target = new_root + (inside or path)
    _make_node(target, os.path.isdir(path))
    linux.mount(path, target, None, MS_BIND | (MS_REC if recursive else 0))
    flags = MS_BIND | MS_REMOUNT | MS_NOSUID | extra_flags | (0 if writable else MS_RDONLY)
    linux.mount(None, target, None, _remount_flags(path, flags))


def _symlink(new_root, link, target):
    path = new_root + link
    if os.path.lexists(path):
        return
    os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
    os.symlink(target, path)


@dataclasses.dataclass
class RootPlan:
    view: HostView
    workdir: str
    readonly: list         # explicit read-only paths, bound last (real paths)
    readonly_links: list
    hidden: list
    devices: DevicePlan
    shm_mb: int


def _mount_filesystems(new, plan):
    """The binds, the masks and /proc, parents before children: a path given read-only
    may hold the work dir (or a masked directory), which must then come after it."""
    readonly = plan.view.readonly + plan.readonly
    masks = [h for h in plan.hidden if os.path.isdir(h) and any(under(h, p) for p in readonly)]
    # Read-only binds are recursive (inside a user namespace a mount with mounts beneath
    # it cannot be bound alone), so the host's mounts beneath them come along and are
    # made read-only one by one.
    beneath = [p for p in plan.view.mount_points
               if any(under(p, r) and p != r for r in readonly)
               and not any(under(p, h) for h in masks) and not under(p, plan.workdir)]
    steps = [(path, "ro") for path in readonly] + [(h, "mask") for h in masks]
    steps += [(p, "beneath") for p in beneath]
    steps += [("/tmp", "tmp"), (plan.workdir, "rw"), ("/proc", "proc")]
    for path, kind in sorted(steps, key=lambda step: step[0].count("/")):
        if kind == "ro":
            _bind(new, path, extra_flags=MS_NODEV, recursive=True)
        elif kind == "beneath":
            linux.mount(None, new + path, None, _remount_flags(
                path, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV))
        elif kind == "mask":
            # Writable until every mount point inside it exists; read-only below.
            linux.mount("tmpfs", new + path, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                   "mode=0755,size=16k")
        elif kind == "tmp":
            _bind(new, os.path.join(plan.workdir, "tmp"), writable=True, extra_flags=MS_NODEV,
                  inside="/tmp")
        elif kind == "rw":
            _bind(new, path, writable=True, extra_flags=MS_NODEV)
        else:
            os.mkdir(new + "/proc")
            linux.mount("proc", new + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    for hidden in masks:
        linux.mount(None, new + hidden, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID
               | MS_NODEV | MS_NOEXEC)


def _mount_dev(new, plan):
    """A /dev of its own: the harmless nodes, the device's, a private /dev/shm."""
    os.mkdir(new + "/dev", 0o755)
    linux.mount("tmpfs", new + "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k")
    for name in plan.devices.nodes:
        if os.path.exists(f"/dev/{name}"):
            _bind(new, f"/dev/{name}", writable=True, extra_flags=MS_NOEXEC)
    for name in plan.devices.dirs:
        _bind(new, f"/dev/{name}", writable=True, extra_flags=MS_NOEXEC)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
                         ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2")):
        os.symlink(target, f"{new}/dev/{name}")
    os.mkdir(new + "/dev/shm")
    linux.mount("tmpfs", new + "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV,
           f"mode=1777,size={plan.shm_mb}m")
    linux.mount(None, new + "/dev", None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NOEXEC)


def build_root(plan):
    """In a fresh mount namespace: builds the new root and pivots into it. Runs as real
    root (privileged path) or as root of the user namespace; raises OSError on refusal."""
    linux.mount(None, "/", None, MS_REC | MS_PRIVATE)
    # The new root is assembled on a tmpfs over an empty directory of the work dir, so
    # every source stays reachable at its own path meanwhile, and one pivot_root ends it.
    new = os.path.join(plan.workdir, STAGING_DIR)
    linux.mount("tmpfs", new, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m")

    for link, target in plan.view.links + plan.readonly_links:
        _symlink(new, link, target)
    _mount_filesystems(new, plan)
    _mount_dev(new, plan)
    linux.mount(None, new, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)

    # pivot_root(".", ".") stacks the host's root on top of the new one; detaching it
    # drops the whole host tree from this namespace.
    os.chdir(new)
    linux.syscall("pivot_root", b".", b".")
    linux.detach(".")
    os.chdir("/")
