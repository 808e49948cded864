import torch
import torch.nn as nn


class Model(nn.Module):
    """An output of about 1e-6 at the task's own inputs: below the default atol, so the
    constant 0 would pass; larger inputs make it vary."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x * 1e-6


batch_size = 16
dim = 256


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
