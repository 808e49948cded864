"""Control for ins_lean_liar: the reference's own forward, timed by the harness's own loop."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, *xs):
        return torch.relu(torch.stack(xs))
