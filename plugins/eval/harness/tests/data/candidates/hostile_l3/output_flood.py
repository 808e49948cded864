# Hostile: floods 300 MB: into its log (stdout), into a file of its own directory, and as
# one line without an end on the harness's pipe; returns zeros if it ever gets there.
import os
import select
import sys

import torch

CHUNK = b"x" * (1 << 20)


def _write_all(fd, data, stall_s=2.0):
    """Writes `data` to `fd`; False when nobody drains it for `stall_s` (the CUDA
    driver's own pipes in a GPU child: a blocked write there would end the attack before
    it reached the harness's pipe, as a timeout)."""
    blocking = os.get_blocking(fd)
    os.set_blocking(fd, False)
    try:
        view = memoryview(data)
        while view:
            if not select.select([], [fd], [], stall_s)[1]:
                return False
            try:
                view = view[os.write(fd, view):]
            except BlockingIOError:
                continue
        return True
    finally:
        os.set_blocking(fd, blocking)


def _flood(write):
    try:
        for _ in range(300):
            write(CHUNK)
    except OSError:
        pass


class ModelNew(torch.nn.Module):
    def forward(self, x):
        _flood(sys.stdout.buffer.write)
        with open("flood.bin", "wb") as handle:
            _flood(handle.write)
        for fd in range(3, 64):
            try:
                os.fstat(fd)
            except OSError:
                continue
            def drained(data, fd=fd):
                if not _write_all(fd, data):
                    raise OSError("nobody reads this descriptor")
            _flood(drained)
        return torch.zeros_like(x)
