"""The control of work_in_hand_over: the same clamp, done in forward."""
import torch


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.clamp(x, min=0.0)
