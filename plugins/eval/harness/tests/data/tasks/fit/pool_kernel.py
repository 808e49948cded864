import torch
import torch.nn as nn


class Model(nn.Module):
    """Max pooling with a 9x9 window: the input must stay at least 9 wide (size_scale
    shrinks the input, not the window below 16, and breaks it)."""

    def __init__(self, kernel_size):
        super().__init__()
        self.pool = nn.MaxPool2d(kernel_size)

    def forward(self, x):
        return self.pool(x)


batch_size = 64
channels = 32
height = 256
width = 256
kernel_size = 9


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [kernel_size]
