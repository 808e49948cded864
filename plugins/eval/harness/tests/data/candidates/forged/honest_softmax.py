"""Control: an honest softmax, the reference's own computation (speedup about 1)."""
import torch


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=1)
