import numpy as np
import torch.nn as nn


class Model(nn.Module):
    """NumPy reference: sum of each row (reduces the last axis)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: np.ndarray) -> np.ndarray:
        return np.sum(x, axis=1)


batch_size = 4096
dim = 65536


def get_inputs():
    return [np.random.randn(batch_size, dim).astype(np.float32)]


def get_init_inputs():
    return []
