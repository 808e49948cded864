import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Bilinear upsampling of NCHW input by an integer factor (align_corners=False)."""

    def __init__(self, scale_factor: int):
        super().__init__()
        self.scale_factor = scale_factor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.interpolate(x, scale_factor=self.scale_factor, mode="bilinear",
                             align_corners=False)


batch_size = 16
channels = 64
height = 256
width = 256
scale_factor = 2


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [scale_factor]
