import numpy as np
import torch.nn as nn


class Model(nn.Module):
    """NumPy reference: layer normalisation over the last axis, no affine parameters."""

    def __init__(self, eps: float):
        super().__init__()
        self.eps = eps

    def forward(self, x: np.ndarray) -> np.ndarray:
        mean = np.mean(x, axis=-1, keepdims=True)
        var = np.mean((x - mean) ** 2, axis=-1, keepdims=True)
        return ((x - mean) / np.sqrt(var + np.float32(self.eps))).astype(np.float32)


batch_size = 8192
hidden_size = 4096
eps = 1e-5


def get_inputs():
    return [np.random.randn(batch_size, hidden_size).astype(np.float32)]


def get_init_inputs():
    return [eps]
