import torch
import torch.nn as nn


class Model(nn.Module):
    """-relu(x): an activation followed by a negation."""

    def forward(self, x):
        return -torch.relu(x)


batch_size = 4096
dim = 1024


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
