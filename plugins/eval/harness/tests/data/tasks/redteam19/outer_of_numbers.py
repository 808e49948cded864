import torch
import torch.nn as nn


class Model(nn.Module):
    """A small forward over many numbers drawn with the inputs: most of its work (the
    numbers into a tensor, their outer product with a part of them) depends on the
    numbers alone, none on x (16 values)."""

    def __init__(self):
        super().__init__()

    def forward(self, x, coeffs):
        c = torch.tensor(coeffs, dtype=torch.float32)
        return x * torch.outer(c, c[:256]).sum()


def get_inputs():
    return [torch.randn(16), [float(v) for v in torch.rand(1000)]]


def get_init_inputs():
    return []
