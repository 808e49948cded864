import torch
import torch.nn as nn


class Model(nn.Module):
    """Clamps every element into [min_value, max_value]."""

    def __init__(self, min_value: float, max_value: float):
        super().__init__()
        self.min_value = min_value
        self.max_value = max_value

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.clamp(x, min=self.min_value, max=self.max_value)


batch_size = 4096
dim = 65536
min_value = -0.5
max_value = 0.75


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [min_value, max_value]
