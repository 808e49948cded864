import torch
import torch.nn as nn


class Model(nn.Module):
    """Unbiased variance (divides by n - 1) over one dimension."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.var(x, dim=self.dim)


batch_size = 4096
dim = 16384
reduce_dim = 1


def get_inputs():
    return [torch.randn(batch_size, dim) * 2.0 + 0.5]


def get_init_inputs():
    return [reduce_dim]
