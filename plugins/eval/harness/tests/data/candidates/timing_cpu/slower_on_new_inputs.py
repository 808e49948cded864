import time

import torch

# Hostile (issue 12, timing): fast for as many calls as the first timing loop has, then
# slow: a speedup that depends on what it has seen before. The re-measurement with other
# inputs (options.timing.confirm_speedup) must not confirm it.
FAST_CALLS = 2 + 6  # the trials and one timing loop of the test (warmup 1, trials 5)


class ModelNew(torch.nn.Module):
    def __init__(self, *args):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        if self.calls > FAST_CALLS:
            time.sleep(0.02)
        return torch.relu(x)
