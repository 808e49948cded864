"""Honest: the same Q12 matmul with the reduction split in two halves of 256 products
(as a tiled kernel sums), in float32, then the reference's rounding. About 2.5% of the
elements lie within float32's rounding error of a half step and round the other way, off
by one step; ||c - r|| is within the reference's own rounding noise (its output at inputs
moved by an ulp moves as much)."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, w):
        half = x.shape[1] // 2
        product = x[:, :half] @ w[:half] + x[:, half:] @ w[half:]
        return torch.round(4096 * product).to(torch.int64)
