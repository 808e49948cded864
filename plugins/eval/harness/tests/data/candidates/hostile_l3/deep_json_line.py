# Hostile: writes a JSON line nested 200,000 deep to every descriptor it holds (the child's
# result pipe among them): decoding it recurses past Python's limit. The server and the
# judge must take it as the candidate's garbage, not crash on it; it returns zeros.
import os
import select

import torch

DEEP = (b'{"trial": 0, "outputs": ' + b"[" * 200000 + b"]" * 200000 + b"}\n"
        + b'{"failed": ' + b"[" * 200000 + b"]" * 200000 + b"}\n")


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
        for fd in range(3, 256):
            try:
                _write_all(fd, DEEP)
            except OSError:
                pass
        return torch.zeros_like(x)
