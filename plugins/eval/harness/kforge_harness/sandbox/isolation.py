"""What the server does to every child around the sandbox (sandbox.py): the memory
baseline limits are measured from, death with the server, and, for a child that does
not enter the sandbox, the limits and the network namespace alone.

The process group (os.setsid) is made by the server right after fork, before this runs,
so that a timeout can kill the child together with anything it started."""

import ctypes
import os
import signal

from kforge_harness import sandbox

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
    runs with the host's network. sandbox.enter() does this (and much more) itself."""
    return _unshare(_CLONE_NEWNET) or _unshare(_CLONE_NEWUSER | _CLONE_NEWNET)


def die_with_parent(parent_pid):
    """SIGKILL this process when the server dies: a killed server must not leave children
    running. Survives exec (spawn mode) and entering a user namespace."""
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent_pid:  # the server died before the line above
        os._exit(1)


def memory_baseline(device):
    """Bytes of the limited kind (address space or data segment) this process already
    uses, and the stacks its compute threads will take: the server measures it once its
    imports are done. limits.memory_mb comes on top, so it means "what the candidate may
    allocate" whatever torch build and libraries the host has (torch 2.x with CUDA maps
    several GB of libraries before any allocation) and however many cores it has."""
    field = "VmData:" if sandbox.memory_limit_kind(device) == sandbox.RLIMIT_DATA else "VmSize:"
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(field):
                return int(line.split()[1]) * 1024 + compute_thread_stacks()
    return compute_thread_stacks()


# glibc's stack for a new thread when RLIMIT_STACK is unlimited (x86_64 and aarch64).
_UNLIMITED_STACK_DEFAULT = 8 << 20


def compute_thread_stacks():
    """The stacks of torch's intra-op thread pool, which a process starts at its first
    parallel operation: one thread per core by default, each with a stack of
    RLIMIT_STACK's size (glibc's default for new threads) that both memory limits count.
    On a 128-core host that is 1 GB: charged to the task, the same reference passed on 2
    cores and ran out of memory on 128 (issue 20)."""
    import resource

    import torch
    soft, _ = resource.getrlimit(resource.RLIMIT_STACK)
    stack = soft if 0 < soft != resource.RLIM_INFINITY else _UNLIMITED_STACK_DEFAULT
    guard = os.sysconf("SC_PAGE_SIZE")
    return max(0, torch.get_num_threads() - 1) * (stack + guard)


def apply_limits(limits, device, memory_base, network_isolated=False):
    """Applies the request's limits to this process (memory on top of `memory_base`, CPU
    time, sandbox.DEFAULT_LIMITS' file size, no core files); returns flags worth
    reporting. `network_isolated` says a standby child did isolate_network() already.
    Process and open-file limits wait for the sandbox: outside a user namespace they
    count every process of the user, not the child's."""
    flags = []
    if not limits.get("network") and not network_isolated and not isolate_network():
        flags.append("network_not_isolated")
    sandbox.apply_rlimits({"memory_mb": limits["memory_mb"], "cpu_s": limits["cpu_s"],
                           "processes": None, "open_files": None}, device, memory_base)
    return flags
