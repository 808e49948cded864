import torch
import torch.nn as nn


class Model(nn.Module):
    """x plus a wave whose frequency is a random scalar input."""

    def __init__(self):
        super().__init__()

    def forward(self, x, freq):
        t = torch.arange(x.numel(), dtype=torch.float32).view_as(x)
        w = torch.sin(t * freq) * torch.exp(t * -1e-7)
        return x + w * torch.cos(t * (freq * 0.5)) + torch.tanh(w)


def get_inputs():
    return [torch.randn(1024, 2048), float(torch.rand(1)) * 1e-3]


def get_init_inputs():
    return []
