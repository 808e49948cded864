# Hostile: a right answer, computed slowly, with the harness's timer replaced so that
# it reports a call of a nanosecond: a 10^6x "speedup". The candidate's own process
# measures it, so the trusted side must not take the number on faith.
import time

import torch

from kforge_harness.timing import timing


def _instant(self, call):
    return call(), 1e-6, 0.0


timing.Clock.call = _instant


class ModelNew(torch.nn.Module):
    def forward(self, x):
        time.sleep(0.02)
        return torch.relu(x)
