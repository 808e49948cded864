import torch
import torch.nn as nn


class Scales:
    """Numbers in an object of the task's own: no layout describes it, so every input is
    made in the child from the seed (relu_listarg's list crosses by buffer)."""

    def __init__(self, *values):
        self.values = list(values)

    def __getitem__(self, index):
        return self.values[index]


class Model(nn.Module):
    """ReLU scaled by the first of the scales."""

    def __init__(self):
        super().__init__()

    def forward(self, x, scales):
        return torch.relu(x) * scales[0]


rows = 256
cols = 4096


def get_inputs():
    return [torch.randn(rows, cols), Scales(float(torch.rand(1)) + 0.5, 1.0)]


def get_init_inputs():
    return []
