import time

import torch
import torch.nn as nn


class Model(nn.Module):
    """Far slower than its work predicts (level1/18's matmul of two transposed operands
    takes 16x the time of a plain one on Debian's CPU torch): 1 s per million elements.
    Small in memory; the fitter's real run must notice the time and shrink it further."""

    def forward(self, x):
        time.sleep(x.numel() * 1e-6)
        return x + 1


batch_size = 1024
dim = 1024


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
