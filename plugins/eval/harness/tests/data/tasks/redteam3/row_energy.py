import torch
import torch.nn as nn


class Model(nn.Module):
    """The energy of each row, ||x[i]||^2 (torch reads the input once, no temporary): a pass over a 64 MB input for a 16 KB
    output, so that the work is all in the reading and the hand-over costs nothing."""

    def forward(self, x):
        return torch.linalg.vector_norm(x, dim=1).square()


rows = 4096
cols = 4096


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
