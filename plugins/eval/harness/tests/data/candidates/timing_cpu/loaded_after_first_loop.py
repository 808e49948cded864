import time

import torch

# Honest, on a machine loaded from its first timing loop on: correct, but every call
# after the trials and one timing loop of the test (warmup 1, trials 5) is slow, whatever
# its inputs, as sustained load slows every loop. Its confirmation loops' fresh calls are
# as slow as their replayed ones: not rejected, and the slow speed is what counts.
FAST_CALLS = 2 + 6


class ModelNew(torch.nn.Module):
    def __init__(self, *args):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        if self.calls > FAST_CALLS:
            time.sleep(0.02)
        return torch.relu(x)
