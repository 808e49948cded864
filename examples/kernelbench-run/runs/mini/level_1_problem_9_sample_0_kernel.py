import torch.nn as nn


class ModelNew(nn.Module):
    """A kernel for a problem the checkout does not have: reported, not evaluated."""

    def forward(self, x):
        return x
