"""Control: the task's own forward (speedup about 1)."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, *xs):
        return torch.stack(xs).sum(0)
