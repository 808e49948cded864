"""MindSpore reference with a PyTorch fallback (seed 000's KernelBench-mindspore format).

Model is the MindSpore reference; where MindSpore is not installed the harness runs
TorchModel, the same operator in PyTorch, and flags the verdict reference_fallback_torch.
Inputs are NumPy arrays so that both frameworks (and the candidate) see the same data."""
import numpy as np
import torch

try:
    import mindspore
    from mindspore import nn as ms_nn, ops as ms_ops
    _Cell = ms_nn.Cell
except ImportError:  # no MindSpore on this host: TorchModel is the reference
    mindspore = None
    _Cell = object


class Model(_Cell):
    """GELU (tanh approximation) in MindSpore."""

    def __init__(self):
        super().__init__()

    def construct(self, x):
        return ms_ops.gelu(x, approximate="tanh")


class TorchModel(torch.nn.Module):
    """The same operator in PyTorch."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.nn.functional.gelu(x, approximate="tanh")


batch_size = 4096
dim = 65536


def get_inputs():
    return [np.random.randn(batch_size, dim).astype(np.float32)]


def get_init_inputs():
    return []
