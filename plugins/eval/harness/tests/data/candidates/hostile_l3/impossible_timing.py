# Hostile: right answers, and a timer replaced so that it reports a negative time (JSON
# also carries NaN and Infinity): taken as it is, the speedup is infinite.
import torch

from kforge_harness.timing import timing


def _negative(self, call):
    return call(), -1.0, float("nan")


timing.Clock.call = _negative


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
