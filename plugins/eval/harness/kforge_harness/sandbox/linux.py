"""The Linux system calls the sandbox makes, through ctypes (no third-party module):
each raises OSError naming the call and the errno text when the kernel refuses."""

import ctypes
import os

from kforge_harness.sandbox import seccomp

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 1024, 2048, 1 << 21
MNT_DETACH = 2

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_SET_SECUREBITS = 28
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
PR_SET_PTRACER = 0x59616D61
PR_SET_PTRACER_ANY = ctypes.c_ulong(2 ** 64 - 1 if ctypes.sizeof(ctypes.c_ulong) == 8 else 2 ** 32 - 1)
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4

libc = ctypes.CDLL(None, use_errno=True)
libc.mount.argtypes = (ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong,
                       ctypes.c_char_p)
libc.umount2.argtypes = (ctypes.c_char_p, ctypes.c_int)
libc.unshare.argtypes = (ctypes.c_int,)
libc.sethostname.argtypes = (ctypes.c_char_p, ctypes.c_size_t)
libc.prctl.argtypes = (ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong,
                       ctypes.c_ulong)


def fail(what):
    """Raises the OSError of the last failed call (errno), naming `what`."""
    error = ctypes.get_errno()
    raise OSError(error, f"{what}: {os.strerror(error)}")


def unshare(flags):
    if libc.unshare(flags) != 0:
        fail(f"unshare({flags:#x})")


def _c_string(text):
    return None if text is None else os.fsencode(text)


def mount(source, target, fstype, flags, data=None):
    if libc.mount(_c_string(source), _c_string(target), _c_string(fstype), flags,
                  _c_string(data)) != 0:
        fail(f"mount {source or ''} on {target}")


def detach(target):
    """umount2(target, MNT_DETACH)."""
    if libc.umount2(_c_string(target), MNT_DETACH) != 0:
        fail(f"umount2 {target}")


def prctl(option, arg2=0, arg3=0):
    if libc.prctl(option, arg2, arg3, 0, 0) != 0:
        fail(f"prctl({option})")


def syscall(name, *args):
    """A call glibc has no wrapper for (pivot_root, capset), by its number here."""
    arch = seccomp.current_arch()
    if arch is None:
        raise OSError(38, f"no syscall table for this architecture ({name})")  # ENOSYS
    if libc.syscall(ctypes.c_long(arch.numbers[name]), *args) != 0:
        fail(name)


def sethostname(name):
    encoded = name.encode()
    if libc.sethostname(encoded, len(encoded)) != 0:
        fail("sethostname")
