"""MindSpore reference with a PyTorch fallback (seed 000's KernelBench-mindspore format).

Layer normalisation over the last dimension, without affine parameters. Where MindSpore
is not installed the harness runs TorchModel and flags reference_fallback_torch."""
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
    """(x - mean) / sqrt(var + eps) over the last dimension, in MindSpore."""

    def __init__(self, eps: float = 1e-5):
        super().__init__()
        self.eps = eps

    def construct(self, x):
        mean = ms_ops.mean(x, axis=-1, keep_dims=True)
        var = ms_ops.mean((x - mean) ** 2, axis=-1, keep_dims=True)
        return (x - mean) / ms_ops.sqrt(var + self.eps)


class TorchModel(torch.nn.Module):
    """The same operator in PyTorch."""

    def __init__(self, eps: float = 1e-5):
        super().__init__()
        self.eps = eps

    def forward(self, x):
        return torch.nn.functional.layer_norm(x, x.shape[-1:], eps=self.eps)


batch_size = 4096
dim = 8192


def get_inputs():
    return [np.random.randn(batch_size, dim).astype(np.float32)]


def get_init_inputs():
    return [1e-5]
