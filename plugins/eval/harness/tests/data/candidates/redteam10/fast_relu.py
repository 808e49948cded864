"""An honest ReLU, once: against slow_relu's twenty, a speedup well over 1 that the
server confirms against its reference timed anew (the stored record is dropped)."""
import torch


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
