"""A float64 matmul computed in float32 (half the bytes, twice the flops per vector), the
result widened back: about 1e-7 of the output off, a float32 kernel's error, not a
float64 one's (1e-16)."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b):
        return (a.float() @ b.float()).double()
