import torch
import torch.nn as nn


def _holding(x, scale):
    """x and its scale in a closure: nothing Python reads of a function's parts holds
    them, so the child makes it from the seed and holds it alone (handover/tree.py)."""
    def held():
        return x, scale
    return held


class Model(nn.Module):
    """ReLU of the tensor the closure holds, scaled."""

    def __init__(self):
        super().__init__()

    def forward(self, held):
        x, scale = held()
        return torch.relu(x) * scale


rows = 256
cols = 4096


def get_inputs():
    return [_holding(torch.randn(rows, cols), float(torch.rand(1)) + 0.5)]


def get_init_inputs():
    return []
