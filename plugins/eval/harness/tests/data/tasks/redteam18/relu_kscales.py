import torch
import torch.nn as nn


class Model(nn.Module):
    """ReLU scaled by the first of 1000 numbers drawn with the inputs: the list crosses as
    1000 inline values (handover/tree.py MAX_INLINE_VALUES), which a timed call's
    command carries (input_values)."""

    def __init__(self):
        super().__init__()

    def forward(self, x, scales):
        return torch.relu(x) * scales[0]


rows = 256
cols = 4096


def get_inputs():
    return [torch.randn(rows, cols), [float(v) + 0.5 for v in torch.rand(1000)]]


def get_init_inputs():
    return []
