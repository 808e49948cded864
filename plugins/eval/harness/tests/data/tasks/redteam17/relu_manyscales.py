import torch
import torch.nn as nn


class Model(nn.Module):
    """ReLU scaled by the first of 20000 numbers drawn with the inputs: the list crosses
    as 20000 inline values, which a timed call's command carries (input_values) and the
    child decodes inside the call's bracket."""

    def __init__(self):
        super().__init__()

    def forward(self, x, scales):
        return torch.relu(x) * scales[0]


rows = 256
cols = 1024


def get_inputs():
    return [torch.randn(rows, cols), [float(v) + 0.5 for v in torch.rand(20000)]]


def get_init_inputs():
    return []
