import numpy as np
import torch

try:
    from mindspore import nn as ms_nn, ops as ms_ops
    _Cell = ms_nn.Cell
except ImportError:
    _Cell = object


class Model(_Cell):
    """ReLU with a MindSpore reference (kernelbench-mindspore format)."""

    def __init__(self):
        super().__init__()

    def construct(self, x):
        return ms_ops.relu(x)


class TorchModel(torch.nn.Module):
    """The PyTorch fallback where MindSpore is missing."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


batch_size = 16
dim = 128


def get_inputs():
    return [np.random.randn(batch_size, dim).astype(np.float32)]


def get_init_inputs():
    return []
