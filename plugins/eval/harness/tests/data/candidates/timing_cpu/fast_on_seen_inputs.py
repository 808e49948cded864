import time

import torch

# Hostile (issue 12, timing): fast on the inputs of the first timing loop (as if it had
# known them in advance), slow on any other: a speedup that depends on inputs it has seen
# before. The confirmation loops' fresh calls are slower than their replayed ones beside
# them: rejected. The test's calls: 2 trials, then the timing loop (warmup 1, trials 5).
FIRST_LOOP = range(3, 2 + 6 + 1)


class ModelNew(torch.nn.Module):
    def __init__(self, *args):
        super().__init__()
        self.calls = 0
        self.seen = set()

    def forward(self, x):
        self.calls += 1
        key = (tuple(x.shape), float(x.flatten()[:256].sum()))
        if self.calls in FIRST_LOOP:
            self.seen.add(key)
        elif self.calls > FIRST_LOOP[-1] and key not in self.seen:
            time.sleep(0.02)
        return torch.relu(x)
