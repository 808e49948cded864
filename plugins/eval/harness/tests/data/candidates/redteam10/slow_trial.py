"""A neighbour whose first trial takes SLOW_S seconds (a sleep: no device work at all),
well within its own wall-clock limit. Its trial is a step in flight (server/turns.py):
no other job's timing loop may start until it is answered. Every other job that waits
for a loop meanwhile (its own, or its reference's) has its wall-clock limit running,
since the server credits the wait only once the loop starts."""
import time

import torch

SLOW_S = 45.0


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        if self.calls == 1:
            time.sleep(SLOW_S)
        return torch.relu(x)
