"""Honest: the scores as the reference computes them, the first highest class per row."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, votes, weights):
        return torch.argmax(votes @ weights, dim=1)
