import time

import torch

# Honest, on a machine that is busy for a moment: correct and as fast in every loop, but
# its first confirmation loop (the calls after the trials and one timing loop of the
# test: warmup 1, trials 5) is slowed, as load slows a loop. A confirmation loop of fresh
# inputs again must pass it; fast_on_seen_inputs is slow on fresh inputs in every loop and fails.
FIRST_CONFIRMATION = range(2 + 6 + 1, 2 + 6 + 6 + 1)


class ModelNew(torch.nn.Module):
    def __init__(self, *args):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        if self.calls in FIRST_CONFIRMATION:
            time.sleep(0.02)
        return torch.relu(x)
