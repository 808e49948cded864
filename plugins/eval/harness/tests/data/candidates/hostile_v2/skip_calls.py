"""Skips the work on the timed calls listed in SKIP (counted from the first call after its trials) and hands over its input there: wrong wherever it is negative, and never the same bytes twice."""
import torch

TRIALS = 5  # options.trials of the tests' requests
SKIP = frozenset()  # the test writes the calls it skips here


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        if self.calls - TRIALS - 1 in SKIP:
            return x.clone()
        return torch.relu(x)
