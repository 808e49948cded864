"""The reference's work on the tensor an object of the task's own holds."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, held):
        return torch.relu(held.x) * held.scale
