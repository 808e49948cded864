import torch
import torch.nn as nn


class Model(nn.Module):
    """Multiplies by a scalar given at construction."""

    def __init__(self, factor):
        super().__init__()
        self.factor = factor

    def forward(self, x):
        return x * self.factor


batch_size = 64
dim = 256
factor = 2.5


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [factor]
