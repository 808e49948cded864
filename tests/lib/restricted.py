"""Runs a command where the sandbox cannot have everything, as in the places users run kforge:

    python3 tests/lib/restricted.py MODE -- COMMAND [ARGS...]

A seccomp filter (inherited by every process the command starts) answers what MODE denies
with the error a restricted host gives; the rest of the machine is as it is.

    userns     no user namespaces (unshare/clone with CLONE_NEWUSER: EPERM), as where
               unprivileged user namespaces are switched off
    mountns    no mount namespaces (CLONE_NEWNS: EPERM)
    container  Docker's default for a root without CAP_SYS_ADMIN: no namespace of any kind,
               no mount, umount, pivot_root or setns (EPERM)
    seccomp    no seccomp filter of one's own (seccomp(): EINVAL, as a kernel without
               CONFIG_SECCOMP_FILTER)

clone3 answers ENOSYS in every mode (its flags are behind a pointer a filter cannot read),
so the C library falls back to clone, as it does in Docker.
"""

import ctypes
import errno
import os
import platform
import struct
import sys

# struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6].
_NR, _ARCH, _ARG0_LOW = 0, 4, 16
_BPF_LD_W_ABS, _BPF_JEQ_K, _BPF_JSET_K, _BPF_RET_K = 0x20, 0x15, 0x45, 0x06
_RET_ALLOW, _RET_ERRNO, _RET_KILL_PROCESS = 0x7FFF0000, 0x00050000, 0x80000000

_ARCHES = {  # machine: (AUDIT_ARCH, syscall numbers)
    "x86_64": (0xC000003E, {"unshare": 272, "clone": 56, "clone3": 435, "setns": 308, "mount": 165,
                            "umount2": 166, "pivot_root": 155, "seccomp": 317}),
    "aarch64": (0xC00000B7, {"unshare": 97, "clone": 220, "clone3": 435, "setns": 268, "mount": 40,
                             "umount2": 39, "pivot_root": 41, "seccomp": 277}),
}

CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC = 0x20000, 0x2000000, 0x4000000, 0x8000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
_EVERY_NAMESPACE = (CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER |
                    CLONE_NEWPID | CLONE_NEWNET)

# mode -> (namespace flags unshare/clone may not carry, syscalls refused outright with errno)
MODES = {
    "userns": (CLONE_NEWUSER, {}),
    "mountns": (CLONE_NEWNS, {}),
    "container": (_EVERY_NAMESPACE, {"setns": errno.EPERM, "mount": errno.EPERM, "umount2": errno.EPERM,
                                     "pivot_root": errno.EPERM}),
    "seccomp": (0, {"seccomp": errno.EINVAL}),
}


def _insn(code, k, jt=0, jf=0):
    return struct.pack("HBBI", code, jt, jf, k)


def program(mode):
    """The filter for `mode` on this machine's architecture, as bytes of sock_filter."""
    audit_arch, numbers = _ARCHES[platform.machine()]
    flags, refused = MODES[mode]
    refused = {**refused, "clone3": errno.ENOSYS}
    insns = [_insn(_BPF_LD_W_ABS, _ARCH),
             _insn(_BPF_JEQ_K, audit_arch, 1, 0),
             _insn(_BPF_RET_K, _RET_KILL_PROCESS),
             _insn(_BPF_LD_W_ABS, _NR)]
    for name, error in refused.items():
        insns += [_insn(_BPF_JEQ_K, numbers[name], 0, 1), _insn(_BPF_RET_K, _RET_ERRNO | error)]
    if flags:
        for name in ("unshare", "clone"):
            # nr == name and (arg0 & flags) -> EPERM; the low 32 bits hold every CLONE_NEW* flag.
            insns += [_insn(_BPF_JEQ_K, numbers[name], 0, 4),
                      _insn(_BPF_LD_W_ABS, _ARG0_LOW),
                      _insn(_BPF_JSET_K, flags, 0, 1),
                      _insn(_BPF_RET_K, _RET_ERRNO | errno.EPERM),
                      _insn(_BPF_LD_W_ABS, _NR)]
    insns.append(_insn(_BPF_RET_K, _RET_ALLOW))
    return b"".join(insns)


def install(mode):
    libc = ctypes.CDLL(None, use_errno=True)
    code = program(mode)
    buffer = ctypes.create_string_buffer(code, len(code))

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = SockFprog(len(code) // 8, ctypes.cast(buffer, ctypes.c_void_p).value)
    PR_SET_NO_NEW_PRIVS, SECCOMP_SET_MODE_FILTER = 38, 1
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    seccomp_nr = _ARCHES[platform.machine()][1]["seccomp"]
    if libc.syscall(ctypes.c_long(seccomp_nr), ctypes.c_uint(SECCOMP_SET_MODE_FILTER), ctypes.c_uint(0),
                    ctypes.byref(fprog)) != 0:
        raise OSError(ctypes.get_errno(), "seccomp(SET_MODE_FILTER)")


def main(argv):
    if len(argv) < 3 or argv[0] not in MODES or argv[1] != "--":
        sys.stderr.write(f"usage: restricted.py {{{','.join(MODES)}}} -- COMMAND [ARGS...]\n")
        return 2
    if platform.machine() not in _ARCHES:
        sys.stderr.write(f"restricted.py: no syscall table for {platform.machine()}\n")
        return 77
    install(argv[0])
    os.execvp(argv[2], argv[2:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
