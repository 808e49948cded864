import torch
import torch.nn as nn


class Model(nn.Module):
    """ReLU scaled by the first of a list of numbers: the list crosses by buffer as
    inline values beside x (handover/tree.py); made in the child from the seed before
    that, nothing checked x after a call (red team 17)."""

    def __init__(self):
        super().__init__()

    def forward(self, x, scales):
        return torch.relu(x) * scales[0]


rows = 1024
cols = 4096


def get_inputs():
    return [torch.randn(rows, cols), [float(torch.rand(1)) + 0.5, 1.0]]


def get_init_inputs():
    return []
