import torch
import torch.nn as nn


class Model(nn.Module):
    """The mean of each centred row: zero up to rounding, whatever the input
    (the kind of task KernelBench issue #165 is about)."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return (x - x.mean(dim=1, keepdim=True)).mean(dim=1)


batch_size = 32
dim = 128


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
