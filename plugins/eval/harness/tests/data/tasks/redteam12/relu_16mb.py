import torch
import torch.nn as nn


class Model(nn.Module):
    """ReLU, elementwise, over 16 MB."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(1024, 4096)]


def get_init_inputs():
    return []
