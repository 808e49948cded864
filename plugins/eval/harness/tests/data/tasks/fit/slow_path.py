import time

import torch
import torch.nn as nn


class Model(nn.Module):
    """Far slower than its work predicts (level1/18's matmul of two transposed operands
    takes 16x the time of a plain one on Debian's CPU torch): one CPU second per million
    elements. Small in memory; the fitter's real run must notice and shrink it further."""

    def forward(self, x):
        busy_until = time.process_time() + x.numel() * 1e-6
        while time.process_time() < busy_until:
            pass
        return x + 1


batch_size = 1024
dim = 1024


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
