"""Tells the timing from the trials by counting calls: the request's 2 trials run the
test code twice, 4 calls each. From the 9th call on it skips the work on the last call
of every 4 (the test's last case), returning noise. Expected: cheat_detected."""
import torch

_calls = [0]


def matmul_chain(a, b):
    _calls[0] += 1
    if _calls[0] > 8 and _calls[0] % 4 == 0:
        return torch.rand(a.shape[0], b.shape[1])
    return torch.relu(torch.mm(a, b))
