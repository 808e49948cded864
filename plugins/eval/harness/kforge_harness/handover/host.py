"""Host buffers: a memfd the owner seals against shrinking and growing, mapped shared by
both sides. Sealed, so that a child truncating it cannot make the owner's next read of
its mapping fault (SIGBUS in a trusted process would be the harness's failure)."""

import fcntl
import mmap
import os

import numpy as np
import torch

_SEALS = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL


class HostMapping:
    """`nbytes` of shared host memory: `raw` is a uint8 tensor over it."""

    kind = "host"

    def __init__(self, fd, nbytes, owner):
        self.fd = fd
        self.nbytes = nbytes
        self.owner = owner
        # mmap refuses a length of 0: an empty buffer still maps one page.
        self._map = mmap.mmap(fd, max(nbytes, 1), flags=mmap.MAP_SHARED,
                              prot=mmap.PROT_READ | mmap.PROT_WRITE)
        array = np.frombuffer(self._map, dtype=np.uint8, count=nbytes)
        self.raw = torch.from_numpy(array)

    @staticmethod
    def allocate(nbytes, name="kforge-buffer"):
        fd = os.memfd_create(name, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        try:
            os.ftruncate(fd, max(nbytes, 1))
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, _SEALS)
            return HostMapping(fd, nbytes, owner=True)
        except BaseException:
            os.close(fd)
            raise

    @staticmethod
    def open(fd, nbytes):
        """The child's side: maps a received descriptor; refuses one that is not a sealed
        memfd of at least `nbytes` (the owner's promise, checked, not taken)."""
        seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
        if seals & (fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW) != fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW:
            raise OSError("a shared buffer that is not sealed")
        if os.fstat(fd).st_size < max(nbytes, 1):
            raise OSError("a shared buffer smaller than its layout")
        return HostMapping(fd, nbytes, owner=False)

    def close(self):
        self.raw = None
        try:
            self._map.close()
        except BufferError:  # a view still exported: the mapping goes with the process
            pass
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
