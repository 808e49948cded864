# Hostile: floods the harness's pipe with 300 MB of short, valid lines (each a message the
# server decodes and ignores), keeping the server's loop, which serves every other
# request, busy; returns zeros if it ever gets there.
import os

import torch

LINES = b'{"ready": true}\n' * 65536  # 1 MB


class ModelNew(torch.nn.Module):
    def forward(self, x):
        for fd in range(3, 64):
            try:
                os.fstat(fd)
            except OSError:
                continue
            try:
                for _ in range(300):
                    os.write(fd, LINES)
            except OSError:
                pass
        return torch.zeros_like(x)
