import torch
import torch.nn as nn


class Model(nn.Module):
    """Outer-product-like matmul with a small inner dimension: (M, K) @ (K, N), K << M, N."""

    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)


m = 16384
k = 32
n = 16384


def get_inputs():
    return [torch.randn(m, k), torch.randn(k, n)]


def get_init_inputs():
    return []
