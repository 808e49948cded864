# Hostile: reports its own failure in shapes the harness never sends (a list where the
# stage's name belongs, a number for the exception's type names) on every descriptor it
# holds: read without checking the types, such a line raises in the server's loop.
import json
import os

import torch

LINE = json.dumps({"failed": {"stage": ["import"], "types": 7, "text": {"a": 1},
                              "where": [], "trial": {"x": 1}}}) + "\n"


class ModelNew(torch.nn.Module):
    def forward(self, x):
        for fd in range(3, 256):
            try:
                os.write(fd, LINE.encode())
            except OSError:
                pass
        return torch.zeros_like(x)
