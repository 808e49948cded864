import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Wrong: scales by a factor that is off by 1%."""

    def __init__(self, factor):
        super().__init__()
        self.factor = factor

    def forward(self, x):
        return x * (self.factor * 1.01)
