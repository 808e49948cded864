"""Not honest: the quantized matmul's products in bfloat16 (a faster, less exact kernel),
then the reference's rounding. bfloat16 keeps 8 bits of mantissa: most elements move by
one step or more, far beyond the reference's own rounding noise."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, w):
        return torch.round(4 * (x.bfloat16() @ w.bfloat16()).float()).to(torch.int64)
