import torch
import torch.nn as nn


class Model(nn.Module):
    """Matrix-vector product: y = A @ v, with v given as a (K, 1) column."""

    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, v)


m = 16384
k = 16384


def get_inputs():
    return [torch.randn(m, k), torch.randn(k, 1)]


def get_init_inputs():
    return []
