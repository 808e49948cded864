import torch
import torch.nn as nn


class Model(nn.Module):
    """ReLU in place on its input (nn.ReLU(inplace=True)'s pattern): the reference's output
    IS its input, which lies in the input slot, not in the timing child's arena
    (handover/arena.py). So the reference's own timing child copies its outputs into the
    slot (candidate.py _timed_call, offsets None), and that copy is in the reference's gap,
    refunded to every candidate (redteam21 attack 3)."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.relu_()


batch_size = 8192
dim = 16384


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
