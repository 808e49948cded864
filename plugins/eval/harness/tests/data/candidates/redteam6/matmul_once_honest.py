"""Honest: x @ w once (tasks/redteam6/matmul_eightfold computes it eight times over)."""
import torch


class ModelNew(torch.nn.Module):
    def forward(self, x, w):
        return x @ w
