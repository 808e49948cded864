import torch
import torch.nn as nn


class Model(nn.Module):
    """Reads a value back from the data (.item()) to choose its path: the meta device has
    no values (the fitter's meta run sees zeros and takes the error path), so the fitter
    must search with real runs. 256 MB of input at its own sizes."""

    def forward(self, x):
        peak = x.abs().max().item()
        if peak == 0:
            raise ValueError("an all-zero input cannot be normalised")
        return x / peak


batch_size = 1024
dim = 65536


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
