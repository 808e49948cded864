"""Honest: the same quantized matmul, its products summed in float64 (more exact than the
reference's float32 sums), then rounded. Elements within a float32 rounding error of a
half step round the other way: an integer output off by one step there, the rest equal."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, w):
        return torch.round(4 * (x.double() @ w.double())).to(torch.int64)
