"""A timed call's outputs read by the task host out of the child's own memory (CPU only).

Why: when the child copies its outputs into the lent slot, that copy is code in the
candidate's process, and the reference's loop pays the same copy, which the server's clock
then refunds to every candidate (timing_plan.charged subtracts the reference's gap). A
candidate that skipped the copy (computing straight into the slot, its hand-over replaced)
got the copy's time as a speedup: up to 2x for an elementwise kernel. Here the child
copies nothing: it reports where its outputs lie, the server stops its processes (the
call's clock stops when they are all stopped), and the task host reads them with
process_vm_readv into a buffer of its own. Nothing of the candidate runs during the read,
so it needs no clock (its cost depends on how the candidate's pages are mapped: huge pages
read 2.5x faster); what the candidate points at is its output, judged as such.

Needs cross-memory attach (Linux >= 3.2) and ptrace-mode access from the task host to the
sandboxed worker: the worker allows it under Yama (sandbox.enter: PR_SET_PTRACER), and
Yama's scope 2 needs a root server, scope 3 forbids it. Where any of that is missing the
child copies into the slot as before (`available()` says why); a device's outputs, which
are not in host memory, always do."""

import ctypes
import errno
import os

_libc = ctypes.CDLL(None, use_errno=True)
_libc.process_vm_readv.restype = ctypes.c_ssize_t
_libc.process_vm_readv.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_ulong,
                                   ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]
# The kernel takes at most IOV_MAX (1024) vectors a call.
_MAX_VECTORS = 1024
_YAMA = "/proc/sys/kernel/yama/ptrace_scope"


class _Vector(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("length", ctypes.c_size_t)]


class ReadFailed(Exception):
    """The outputs could not be read where the child said they lie (`errno` set)."""

    def __init__(self, message, code):
        super().__init__(message)
        self.errno = code


def _readv(pid, local, remote):
    def vectors(pairs):
        array = (_Vector * len(pairs))()
        for index, (base, length) in enumerate(pairs):
            array[index].base, array[index].length = base, length
        return array
    wanted = sum(length for _, length in remote)
    got = _libc.process_vm_readv(pid, ctypes.byref(vectors(local)), len(local),
                                 ctypes.byref(vectors(remote)), len(remote), 0)
    if got < 0:
        code = ctypes.get_errno()
        raise ReadFailed(f"process_vm_readv: {os.strerror(code)}", code)
    if got != wanted:
        raise ReadFailed(f"process_vm_readv read {got} of {wanted} bytes: the rest is not "
                         "mapped readable in that process", errno.EFAULT)


def read_regions(pid, regions):
    """Copies [(local address, remote address, nbytes)] from process `pid`; ReadFailed
    when any byte could not be read."""
    regions = [region for region in regions if region[2] > 0]
    for start in range(0, len(regions), _MAX_VECTORS):
        part = regions[start:start + _MAX_VECTORS]
        _readv(pid, [(local, nbytes) for local, _, nbytes in part],
               [(remote, nbytes) for _, remote, nbytes in part])


def available():
    """None where the task host can read a sandboxed worker's memory on this machine,
    else why not (then outputs cross by the child's copy)."""
    try:
        with open(_YAMA, encoding="ascii") as handle:
            scope = int(handle.read().strip() or 0)
    except (OSError, ValueError):
        scope = 0  # no Yama: ptrace access by credentials alone
    if scope >= 3:
        return f"Yama's ptrace_scope is {scope}: no process may read another's memory"
    if scope == 2 and os.geteuid() != 0:
        return "Yama's ptrace_scope is 2: only root may read another process's memory"
    probe = ctypes.create_string_buffer(b"kforge", 8)
    copy = ctypes.create_string_buffer(8)
    try:
        read_regions(os.getpid(), [(ctypes.addressof(copy), ctypes.addressof(probe), 8)])
    except ReadFailed as exc:
        return f"this kernel cannot read another process's memory ({exc})"
    if copy.raw != probe.raw:
        return "process_vm_readv returned other bytes than it was given"
    return None
