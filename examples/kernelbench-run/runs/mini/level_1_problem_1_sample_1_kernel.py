import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Correct: ReLU as a max with zero."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.maximum(x, torch.zeros_like(x))
