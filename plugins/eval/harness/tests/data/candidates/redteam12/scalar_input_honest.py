"""Control: the task's own forward (speedup about 1)."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, freq):
        t = torch.arange(x.numel(), dtype=torch.float32).view_as(x)
        w = torch.sin(t * freq) * torch.exp(t * -1e-7)
        return x + w * torch.cos(t * (freq * 0.5)) + torch.tanh(w)
