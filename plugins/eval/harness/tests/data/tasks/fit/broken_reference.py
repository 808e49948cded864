import torch
import torch.nn as nn


class Model(nn.Module):
    """Broken at its own sizes: 100 features do not split into groups of 7."""

    def forward(self, x):
        return x.view(x.shape[0], -1, 7).sum(dim=-1)


batch_size = 16
features = 100


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return []
