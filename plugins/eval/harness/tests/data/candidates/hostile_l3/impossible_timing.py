# Hostile: right answers, and a timer replaced so that it reports a negative time (JSON
# also carries NaN and Infinity): taken as it is, the speedup is infinite.
import torch

from kforge_harness import candidate, timing


def _negative(self, call):
    call()
    return -1.0, -1.0


timing.Timer.measure = _negative
candidate.Timer.measure = _negative


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
