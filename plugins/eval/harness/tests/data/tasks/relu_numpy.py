import numpy as np


class Model:
    """ReLU with a NumPy reference (kernelbench-numpy format)."""

    def __init__(self):
        pass

    def forward(self, x):
        return np.maximum(x, 0.0).astype(np.float32)


batch_size = 16
dim = 128


def get_inputs():
    return [np.random.randn(batch_size, dim).astype(np.float32)]


def get_init_inputs():
    return []
