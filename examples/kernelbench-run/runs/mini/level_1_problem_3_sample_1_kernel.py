import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Correct: the row sum as a matrix product with ones."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x @ torch.ones(x.shape[1], 1, dtype=x.dtype, device=x.device)
