import numpy as np
import torch.nn as nn


class Model(nn.Module):
    """NumPy reference: C = A @ B."""

    def __init__(self):
        super().__init__()

    def forward(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.matmul(a, b)


m = 4096
k = 4096
n = 4096


def get_inputs():
    return [np.random.randn(m, k).astype(np.float32), np.random.randn(k, n).astype(np.float32)]


def get_init_inputs():
    return []
