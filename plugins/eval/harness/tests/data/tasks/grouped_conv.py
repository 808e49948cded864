import torch
import torch.nn as nn


class Model(nn.Module):
    """A grouped convolution: the channels must stay divisible by the groups, which a
    plain size_scale does not know (64 * 0.1 = 6 channels, 4 groups)."""

    def __init__(self, in_channels, out_channels, groups):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1, groups=groups, bias=False)

    def forward(self, x):
        return self.conv(x)


batch_size = 2
in_channels = 64
out_channels = 64
groups = 4
height = 32
width = 32


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, groups]
