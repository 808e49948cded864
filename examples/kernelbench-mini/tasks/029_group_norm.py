import torch
import torch.nn as nn


class Model(nn.Module):
    """GroupNorm over NCHW input with learnable per-channel weight and bias."""

    def __init__(self, num_groups: int, num_channels: int):
        super().__init__()
        self.norm = nn.GroupNorm(num_groups=num_groups, num_channels=num_channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


batch_size = 16
num_groups = 8
# Channels are given per group so that scaling sizes keeps them divisible by num_groups.
channels_per_group = 16
height = 256
width = 256


def get_inputs():
    return [torch.randn(batch_size, num_groups * channels_per_group, height, width)]


def get_init_inputs():
    return [num_groups, num_groups * channels_per_group]
