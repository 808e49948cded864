import os
import time

import torch

# kforge-own-marker-5b1e: this candidate's own words, which its memory must hold (the
# scan's control).


class ModelNew(torch.nn.Module):
    """Right for relu; waits in forward (while the test reads its memory from outside)."""

    def __init__(self, *args):
        super().__init__()

    def forward(self, x):
        with open("sleeping", "w") as handle:
            handle.write("1")
        deadline = time.monotonic() + 20
        while not os.path.exists("release") and time.monotonic() < deadline:
            time.sleep(0.05)
        return torch.relu(x)
