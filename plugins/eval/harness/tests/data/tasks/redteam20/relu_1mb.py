import torch
import torch.nn as nn


class Model(nn.Module):
    """ReLU of 1 MB (256 x 1024 float32): on the 2-core VM a forward of a few tens of
    microseconds, about twice the harness work a call refunds (redteam20: a lean loop
    just above the clock's resolution floor)."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


batch_size = 256
dim = 1024


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
