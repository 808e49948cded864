import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Correct: ReLU as a clamp."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.clamp(x, min=0.0)
