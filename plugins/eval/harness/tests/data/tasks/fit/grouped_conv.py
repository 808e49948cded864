import torch
import torch.nn as nn


class Model(nn.Module):
    """A grouped convolution: both channel counts must stay divisible by the groups."""

    def __init__(self, in_channels, out_channels, kernel_size, groups):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=1, groups=groups)

    def forward(self, x):
        return self.conv(x)


batch_size = 16
in_channels = 64
out_channels = 128
groups = 8
kernel_size = 3
height = 128
width = 128


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, groups]
