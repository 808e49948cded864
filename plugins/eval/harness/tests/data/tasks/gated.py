import torch
import torch.nn as nn


class Model(nn.Module):
    """x where a drawn gate is above one half, else zeros: the output carries no
    information at half of the weights' draws (as a clamp that a drawn bias saturates
    does, KernelBench level 2's 58), and all of x's at the others."""

    def __init__(self):
        super().__init__()
        self.gate = nn.Parameter(torch.rand(()))

    def forward(self, x):
        return x * (self.gate > 0.5).to(x.dtype)


batch_size = 16
dim = 256


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
