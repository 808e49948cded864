"""The reference's work (redteam18/relu_infkey)."""
import math

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, scales):
        return torch.relu(x) * scales[math.inf]
