import torch
import torch.nn as nn


class Model(nn.Module):
    """Returns its input: the output lies in the input slot, which the task host reads as
    it reads the arena (handover/arena.py)."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x


rows = 1024
cols = 1024


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
