import numpy as np
import torch.nn as nn


class Model(nn.Module):
    """NumPy reference: ReLU, y = max(x, 0). Takes and returns float32 numpy arrays."""

    def __init__(self):
        super().__init__()

    def forward(self, x: np.ndarray) -> np.ndarray:
        return np.maximum(x, np.float32(0.0))


batch_size = 4096
dim = 65536


def get_inputs():
    return [np.random.randn(batch_size, dim).astype(np.float32)]


def get_init_inputs():
    return []
