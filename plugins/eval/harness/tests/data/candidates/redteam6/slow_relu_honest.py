"""Honest, and slower than the reference: ReLU as x * (x > 0) after a wasted pass (the
control for slow_relu_hogs_first_reference: what this work is worth, about 0.3-0.6x)."""
import torch


class ModelNew(torch.nn.Module):
    def forward(self, x):
        waste = torch.exp(x)  # a pass of real work the reference does not do
        return x * (x > 0) + 0.0 * waste[0, 0]
