import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, scales):
        return torch.relu(x) * scales[0]
