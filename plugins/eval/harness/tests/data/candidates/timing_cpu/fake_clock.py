import time

import torch

# Hostile (issue 12, timing): does its work slowly (a 50 ms sleep stands for it) and
# turns the process's clock back by as much, so the times measured inside its own
# process show a fast kernel. Only a clock outside the process sees the truth.
TRIALS = 2
_real_clock = time.perf_counter_ns
_hidden_ns = [0]


def _doctored_clock():
    return _real_clock() - _hidden_ns[0]


class ModelNew(torch.nn.Module):
    def __init__(self, *args):
        super().__init__()
        self.calls = 0
        time.perf_counter_ns = _doctored_clock

    def forward(self, x):
        self.calls += 1
        if self.calls > TRIALS:
            time.sleep(0.05)
            _hidden_ns[0] += 50_000_000
        return torch.relu(x)
