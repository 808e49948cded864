"""The reference's work (redteam18/relu_counted): the counter bumped, x left alone."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, state):
        counter, x = state
        counter.add_(1.0)
        return torch.relu(x) * 2.0
