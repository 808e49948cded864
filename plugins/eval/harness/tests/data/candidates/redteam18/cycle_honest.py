"""The reference's work on the boxed tensor (redteam18/relu_dictcycle)."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, box):
        return torch.relu(box["x"])
