import torch
import torch.nn as nn


class Model(nn.Module):
    """relu(x - 8): zero everywhere at the task's own inputs (standard normal), so its
    outputs carry no information there; inputs scaled by 10 make it vary."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x - 8.0)


batch_size = 16
dim = 256


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
