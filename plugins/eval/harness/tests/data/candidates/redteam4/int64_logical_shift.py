"""Wrong on half of its elements: the task's halving is an arithmetic shift (>> 1 keeps
the sign); this candidate shifts logically (clears the sign bit), as a kernel that
treats the word as unsigned does. Every element whose LCG step is negative is then off
by exactly 2**63. In int64, c - r wraps to -2**63, whose abs() is -2**63 again: a
negative difference, within the exact rule's tolerance of 0."""
import torch
import torch.nn as nn

MULTIPLIER = 6364136223846793005
INCREMENT = 1442695040888963407
LOW_63_BITS = (1 << 63) - 1


class ModelNew(nn.Module):
    def forward(self, x):
        return ((x * MULTIPLIER + INCREMENT) >> 1) & LOW_63_BITS
