import torch
import torch.nn as nn


class Model(nn.Module):
    """ReLU of x, doubled, which comes in a list beside a one-element counter that the forward
    bumps in place (a state it keeps in its inputs). The task host observes its own
    forward changing input #0; the candidate may then change what the reference changes."""

    def __init__(self):
        super().__init__()

    def forward(self, state):
        counter, x = state
        counter.add_(1.0)
        return torch.relu(x) * 2.0


rows = 256
cols = 4096


def get_inputs():
    return [[torch.zeros(1), torch.randn(rows, cols)]]


def get_init_inputs():
    return []
