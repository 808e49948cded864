import torch
import torch.nn as nn


class Model(nn.Module):
    """Fine on a big machine; more than a small budget holds (1.5 GiB of input, as much
    again of output)."""

    def forward(self, x):
        return torch.relu(x)


rows = 3 * 1024
cols = 128 * 1024


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
