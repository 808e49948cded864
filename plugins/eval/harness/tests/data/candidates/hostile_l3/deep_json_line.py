# Hostile: writes a JSON line nested 200,000 deep to every descriptor it holds (the child's
# result pipe among them): decoding it recurses past Python's limit. The server and the
# judge must take it as the candidate's garbage, not crash on it; it returns zeros.
import os

import torch

DEEP = (b'{"trial": 0, "outputs": ' + b"[" * 200000 + b"]" * 200000 + b"}\n"
        + b'{"failed": ' + b"[" * 200000 + b"]" * 200000 + b"}\n")


class ModelNew(torch.nn.Module):
    def forward(self, x):
        for fd in range(3, 256):
            try:
                os.write(fd, DEEP)
            except OSError:
                pass
        return torch.zeros_like(x)
