"""A wrong integer output that passes as exact: the reference's int64 LCG step
(tasks/redteam3/int_mix) rounded through float64, as a kernel that computes an int64
output in double precision would give (up to 512 off, most elements wrong). Integer
outputs must match exactly (compare.tolerance: atol = rtol = 0), but
compare._Stats._differences copies both sides to float64 before subtracting: float64
has 53 bits, every wrong element rounds to its reference value, and the difference is
0."""
import torch
import torch.nn as nn

MULTIPLIER = 6364136223846793005
INCREMENT = 1442695040888963407


class ModelNew(nn.Module):
    def forward(self, x):
        return ((x * MULTIPLIER + INCREMENT) >> 1).double().long()
