"""Confining a child process: resource limits, no network, death with the server.

The process group (os.setsid) is made by the server right after fork, before this runs,
so that a timeout can kill the child together with anything it started."""

import ctypes
import os
import resource
import signal

_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNET = 0x40000000
_PR_SET_PDEATHSIG = 1

_libc = ctypes.CDLL(None, use_errno=True)


def _unshare(flags):
    return _libc.unshare(ctypes.c_int(flags)) == 0


def isolate_network():
    """Moves this process into a fresh network namespace (no interfaces, no route out).
    As root CLONE_NEWNET suffices; unprivileged, a user namespace must come with it, which
    needs a single-threaded process: a fresh child, before torch or CUDA start threads.
    Returns whether it worked: container runtimes often forbid both, and then the child
    runs with the host's network."""
    return _unshare(_CLONE_NEWNET) or _unshare(_CLONE_NEWUSER | _CLONE_NEWNET)


def die_with_parent(parent_pid):
    """SIGKILL this process when the server dies: a killed server must not leave children
    running. Survives exec (spawn mode) and entering a user namespace."""
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent_pid:  # the server died before the line above
        os._exit(1)


def _set_limit(kind, soft, hard=None):
    _, current_hard = resource.getrlimit(kind)
    hard = soft if hard is None else hard
    if current_hard != resource.RLIM_INFINITY:
        soft, hard = min(soft, current_hard), min(hard, current_hard)
    resource.setrlimit(kind, (soft, hard))


def _limited_kind(device):
    # On CPU the address-space limit is exact. CUDA/ACL reserve huge virtual ranges at
    # initialisation (more than any RLIMIT_AS we would set), so on accelerators the limit
    # goes on the data segment (private writable memory) instead, which those reservations
    # do not count against.
    return resource.RLIMIT_DATA if device.is_accelerator else resource.RLIMIT_AS


def memory_baseline(device):
    """Bytes of the limited kind (address space or data segment) this process already
    uses: the server measures it once its imports are done. limits.memory_mb comes on top,
    so it means "what the candidate may allocate" whatever torch build and libraries the
    host has (torch 2.x with CUDA maps several GB of libraries before any allocation)."""
    field = "VmData:" if _limited_kind(device) == resource.RLIMIT_DATA else "VmSize:"
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(field):
                return int(line.split()[1]) * 1024
    return 0


def apply_limits(limits, device, memory_base, network_isolated=False):
    """Applies the request's limits to this process; returns flags worth reporting.
    `memory_base` is the server's memory_baseline(); `network_isolated` says a standby
    child did isolate_network() already."""
    flags = []
    if not limits.get("network") and not network_isolated and not isolate_network():
        flags.append("network_not_isolated")
    # A crashing kernel (SIGSEGV, LLVM assertion) must not write a multi-GB core file.
    _set_limit(resource.RLIMIT_CORE, 0)
    _set_limit(_limited_kind(device), memory_base + int(limits["memory_mb"]) * 1024 * 1024)
    # SIGXCPU at the soft limit, SIGKILL one second later if it is ignored.
    cpu_s = int(limits["cpu_s"])
    _set_limit(resource.RLIMIT_CPU, cpu_s, cpu_s + 1)
    return flags
