"""ReLU computed twenty times over (ReLU is idempotent): a reference any honest single
ReLU beats by far, so that its speedup is confirmed (timing_plan.confirmation_needed)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """ReLU, elementwise, the slow way."""

    def forward(self, x):
        y = x
        for _ in range(20):
            y = torch.relu(y)
        return y


batch_size = 64
dim = 256


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
