import torch
import torch.nn as nn


class Model(nn.Module):
    """ReLU applied twice (idempotent): a candidate that applies it once is honestly about
    twice as fast, so its first timed loop passes 1 and the confirmation runs."""

    def forward(self, x):
        return torch.relu(torch.relu(x))


batch_size = 4096
dim = 1024


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
