import torch
import torch.nn as nn


class Model(nn.Module):
    """Prints while it runs: what a task prints must not reach the caller's stdout (the
    harness server's protocol channel)."""

    def forward(self, x):
        print("the reference talks on stdout")
        return x * 2


batch_size = 1024
dim = 8192


def get_inputs():
    print("get_inputs talks on stdout")
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
