import torch
import torch.nn as nn

N = 1024


class Model(nn.Module):
    """The sum of N small tensors, scaled by a random Python float (the last input)."""

    def __init__(self):
        super().__init__()

    def forward(self, *args):
        *xs, alpha = args
        return torch.stack(xs).sum(0) * alpha


def get_inputs():
    return [*[torch.randn(256) for _ in range(N)], float(torch.rand(1))]


def get_init_inputs():
    return []
