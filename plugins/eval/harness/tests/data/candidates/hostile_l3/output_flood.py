# Hostile: floods 300 MB: into its log (stdout), into a file of its own directory, and as
# one line without an end on the harness's pipe; returns zeros if it ever gets there.
import os
import sys

import torch

CHUNK = b"x" * (1 << 20)


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
            _flood(lambda data, fd=fd: os.write(fd, data))
        return torch.zeros_like(x)
