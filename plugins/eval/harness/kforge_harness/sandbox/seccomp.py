"""The sandbox's seccomp filter, built as raw classic BPF (no python seccomp module exists
on the hosts we run on, and none is needed for a deny list this short).

What it denies, and why (sandbox.py's threat model has the full picture):
- reaching other processes: ptrace, process_vm_readv/writev, process_madvise, pidfd_getfd,
  kcmp;
- leaving or rebuilding the sandbox: setns, unshare, clone with any CLONE_NEW* flag,
  mount and the new mount API, umount2, pivot_root, chroot;
- the kernel's large attack surfaces an evaluation never needs: bpf, perf_event_open,
  userfaultfd, io_uring (its operations bypass seccomp), keyrings, module and kexec
  loading, open_by_handle_at, swap, reboot, acct, quotas, iopl/ioperm, uselib, _sysctl.
clone3 answers ENOSYS instead: its flags sit in memory BPF cannot read, and glibc falls
back to clone (checked above) when clone3 is missing. Everything else is allowed: the
filter is a deny list, so compilers, CUDA and Triton work unchanged.

A denied call fails with EPERM (code sees an ordinary error, not a mysterious death). A
call made through another architecture's table (x32 numbers on x86_64, or a foreign
AUDIT_ARCH) kills the process: a deny list keyed by number is only sound for one table.
"""

import ctypes
import errno
import platform
import struct

# struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6]
_OFFSET_NR = 0
_OFFSET_ARCH = 4
_OFFSET_ARG0_LOW = 16  # little-endian: the low half of args[0] (clone's flags)

_BPF_LD_W_ABS = 0x20
_BPF_JEQ_K = 0x15
_BPF_JSET_K = 0x45
_BPF_RET_K = 0x06

_RET_KILL_PROCESS = 0x80000000
_RET_ERRNO = 0x00050000
_RET_ALLOW = 0x7FFF0000

_SECCOMP_SET_MODE_FILTER = 1
_SECCOMP_FILTER_FLAG_TSYNC = 1

# Every namespace flag clone() accepts (NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID,
# NEWNET); CLONE_NEWTIME shares its bit with clone()'s exit signal and exists only for
# unshare/clone3, both denied.
CLONE_NAMESPACE_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 \
    | 0x20000000 | 0x40000000

DENIED = (
    "ptrace", "process_vm_readv", "process_vm_writev", "process_madvise", "pidfd_getfd",
    "kcmp", "setns", "unshare", "mount", "umount2", "pivot_root", "chroot", "open_tree",
    "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr", "bpf",
    "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter",
    "io_uring_register", "keyctl", "add_key", "request_key", "init_module",
    "finit_module", "delete_module", "kexec_load", "kexec_file_load",
    "name_to_handle_at", "open_by_handle_at", "swapon", "swapoff", "reboot", "acct",
    "quotactl", "quotactl_fd", "lookup_dcookie", "iopl", "ioperm", "uselib", "_sysctl",
)


# (x86_64, aarch64) numbers, from the kernel's uapi headers (asm/unistd_64.h,
# asm-generic/unistd.h); None where the call does not exist.
_NUMBERS = {
    "ptrace": (101, 117), "process_vm_readv": (310, 270), "process_vm_writev": (311, 271),
    "process_madvise": (440, 440), "pidfd_getfd": (438, 438), "kcmp": (312, 272),
    "setns": (308, 268), "unshare": (272, 97), "mount": (165, 40), "umount2": (166, 39),
    "pivot_root": (155, 41), "chroot": (161, 51), "open_tree": (428, 428),
    "move_mount": (429, 429), "fsopen": (430, 430), "fsconfig": (431, 431),
    "fsmount": (432, 432), "fspick": (433, 433), "mount_setattr": (442, 442),
    "bpf": (321, 280), "perf_event_open": (298, 241), "userfaultfd": (323, 282),
    "io_uring_setup": (425, 425), "io_uring_enter": (426, 426),
    "io_uring_register": (427, 427), "keyctl": (250, 219), "add_key": (248, 217),
    "request_key": (249, 218), "init_module": (175, 105), "finit_module": (313, 273),
    "delete_module": (176, 106), "kexec_load": (246, 104), "kexec_file_load": (320, 294),
    "name_to_handle_at": (303, 264), "open_by_handle_at": (304, 265), "swapon": (167, 224),
    "swapoff": (168, 225), "reboot": (169, 142), "acct": (163, 89), "quotactl": (179, 60),
    "quotactl_fd": (443, 443), "lookup_dcookie": (212, 18), "iopl": (172, None),
    "ioperm": (173, None), "uselib": (134, None), "_sysctl": (156, None),
    "clone": (56, 220), "clone3": (435, 435), "seccomp": (317, 277), "capset": (126, 91),
}


class Arch:
    def __init__(self, audit_arch, foreign_bit, column):
        self.audit_arch = audit_arch
        self.foreign_bit = foreign_bit  # x32's numbers on x86_64; 0 where none
        self.numbers = {name: numbers[column] for name, numbers in _NUMBERS.items()
                        if numbers[column] is not None}


ARCHES = {"x86_64": Arch(0xC000003E, 0x40000000, 0), "aarch64": Arch(0xC00000B7, 0, 1)}


def current_arch():
    """This machine's table, or None where the filter has no numbers for it."""
    return ARCHES.get(platform.machine())


def _insn(code, k, jt=0, jf=0):
    return struct.pack("HBBI", code, jt, jf, k)


def build_filter(arch):
    """The filter program (bytes of struct sock_filter) for `arch`."""
    deny = _RET_ERRNO | errno.EPERM
    program = [
        _insn(_BPF_LD_W_ABS, _OFFSET_ARCH),
        _insn(_BPF_JEQ_K, arch.audit_arch, jt=1),
        _insn(_BPF_RET_K, _RET_KILL_PROCESS),
        _insn(_BPF_LD_W_ABS, _OFFSET_NR),
    ]
    if arch.foreign_bit:
        program += [_insn(_BPF_JSET_K, arch.foreign_bit, jf=1),
                    _insn(_BPF_RET_K, _RET_KILL_PROCESS)]
    for name in DENIED:
        if name in arch.numbers:  # iopl/ioperm/uselib/_sysctl exist on x86_64 only
            program += [_insn(_BPF_JEQ_K, arch.numbers[name], jf=1), _insn(_BPF_RET_K, deny)]
    program += [
        _insn(_BPF_JEQ_K, arch.numbers["clone3"], jf=1),
        _insn(_BPF_RET_K, _RET_ERRNO | errno.ENOSYS),
        _insn(_BPF_JEQ_K, arch.numbers["clone"], jf=3),
        _insn(_BPF_LD_W_ABS, _OFFSET_ARG0_LOW),
        _insn(_BPF_JSET_K, CLONE_NAMESPACE_FLAGS, jf=1),
        _insn(_BPF_RET_K, deny),
        _insn(_BPF_RET_K, _RET_ALLOW),
    ]
    return b"".join(program)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


# Opened, and the program built, at import (in the server), not in each sandboxed child:
# every child installs the same filter.
_libc = ctypes.CDLL(None, use_errno=True)
_ARCH = current_arch()
_PROGRAM = ctypes.create_string_buffer(build_filter(_ARCH)) if _ARCH else None


def install():
    """Installs the filter on every thread of this process (TSYNC). The caller must have
    set no_new_privs (or hold CAP_SYS_ADMIN). Raises OSError when the kernel refuses,
    RuntimeError on an architecture without a table here."""
    if _ARCH is None:
        raise RuntimeError(f"no seccomp syscall table for {platform.machine()}")
    # create_string_buffer adds a NUL byte after the program; it is not part of it.
    fprog = _SockFprog((len(_PROGRAM) - 1) // 8, ctypes.cast(_PROGRAM, ctypes.c_void_p).value)
    result = _libc.syscall(ctypes.c_long(_ARCH.numbers["seccomp"]),
                          ctypes.c_uint(_SECCOMP_SET_MODE_FILTER),
                          ctypes.c_uint(_SECCOMP_FILTER_FLAG_TSYNC), ctypes.byref(fprog))
    if result != 0:
        error = ctypes.get_errno()
        if result > 0:  # TSYNC: the id of a thread that could not be synchronised
            raise OSError(errno.EBUSY, f"thread {result} could not take the seccomp filter")
        raise OSError(error, f"seccomp(SET_MODE_FILTER): {errno.errorcode.get(error, error)}")
