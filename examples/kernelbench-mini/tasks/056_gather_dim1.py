import torch
import torch.nn as nn


class Model(nn.Module):
    """Gather along dim 1: y[i, j] = x[i, index[i, j]]."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        return torch.gather(x, 1, index)


batch_size = 4096
dim = 65536
num_indices = 8192


def get_inputs():
    x = torch.randn(batch_size, dim)
    index = torch.randint(0, dim, (batch_size, num_indices))
    return [x, index]


def get_init_inputs():
    return []
