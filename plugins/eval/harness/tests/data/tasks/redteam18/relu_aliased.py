import torch
import torch.nn as nn


class Model(nn.Module):
    """The same tensor twice: as input #0 and inside the list of input #1. The forward
    applies the ReLU in place through the first and reads the second, which on the task
    host is the same memory: its output is 2 * relu(x), in the child relu(x) + x."""

    def __init__(self):
        super().__init__()

    def forward(self, x, held):
        y = x.relu_()
        return y + held[0]


rows = 256
cols = 1024


def get_inputs():
    x = torch.randn(rows, cols)
    return [x, [x]]


def get_init_inputs():
    return []
