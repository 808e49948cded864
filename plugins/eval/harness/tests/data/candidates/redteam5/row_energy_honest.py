"""Honest: the row energies as the reference computes them."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.linalg.vector_norm(x, dim=1).square()
