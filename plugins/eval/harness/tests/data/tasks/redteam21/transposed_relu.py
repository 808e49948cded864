import torch
import torch.nn as nn


class Model(nn.Module):
    """ReLU returned transposed: a view whose strides are not contiguous. Trials copy it
    into the slot element by element (clock.copy honours strides); a timed call's output
    is read by the task host as nbytes of raw bytes at its data_ptr in the arena
    (host.py _copy_out), i.e. in the memory order of the untransposed tensor
    (redteam21 attack 1b: the reference's own timing loop)."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x).t()


batch_size = 1024
dim = 2048


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
