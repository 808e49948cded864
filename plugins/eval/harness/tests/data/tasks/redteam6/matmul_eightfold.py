import torch
import torch.nn as nn


class Model(nn.Module):
    """x @ w, computed eight times over (each product the same, so the average is x @ w
    exactly): a reference eight times slower than an honest candidate that computes it
    once."""

    def forward(self, x, w):
        y = x @ w
        for _ in range(7):
            y = (x @ w + y) * 0.5
        return y


size = 512


def get_inputs():
    return [torch.randn(size, size), torch.randn(size, size)]


def get_init_inputs():
    return []
