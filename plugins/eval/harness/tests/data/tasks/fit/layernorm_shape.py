import torch
import torch.nn as nn


class Model(nn.Module):
    """KernelBench level2/34's pattern: a stride-2 transposed convolution doubles the
    width, then LayerNorm(out_channels) normalises the last dim, so out_channels must
    equal 2 * width (size_scale 0.05 gives width 1 and out_channels 3)."""

    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.up = nn.ConvTranspose1d(in_channels, out_channels, 4, stride=2, padding=1)
        self.norm = nn.LayerNorm(out_channels)

    def forward(self, x):
        return self.norm(self.up(x))


batch_size = 512
in_channels = 32
out_channels = 64
width = 32


def get_inputs():
    return [torch.randn(batch_size, in_channels, width)]


def get_init_inputs():
    return [in_channels, out_channels]
