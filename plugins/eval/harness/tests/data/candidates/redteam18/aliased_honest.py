"""The reference's own code (redteam18/relu_aliased)."""
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, held):
        y = x.relu_()
        return y + held[0]
