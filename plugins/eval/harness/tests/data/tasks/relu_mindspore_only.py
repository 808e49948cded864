import numpy as np

try:
    from mindspore import nn as ms_nn, ops as ms_ops
    _Cell = ms_nn.Cell
except ImportError:
    _Cell = object


class Model(_Cell):
    """ReLU in MindSpore with no PyTorch fallback: needs MindSpore."""

    def __init__(self):
        super().__init__()

    def construct(self, x):
        return ms_ops.relu(x)


def get_inputs():
    return [np.random.randn(16, 128).astype(np.float32)]


def get_init_inputs():
    return []
