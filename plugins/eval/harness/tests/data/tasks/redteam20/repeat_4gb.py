import torch
import torch.nn as nn


class Model(nn.Module):
    """x repeated 64 times along its rows: 64 MB in, 4 GB out. Its forward writes the
    output once (about 1.2 ms on an H200); one copy of that output reads and writes it
    (about twice the forward). redteam20: on a GPU the harness's copy of a call's outputs
    into the slot is refunded whole to every candidate."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.repeat(1, 64)


batch_size = 4096
dim = 4096


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
