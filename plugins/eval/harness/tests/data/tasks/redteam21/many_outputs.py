import torch
import torch.nn as nn


class Model(nn.Module):
    """ReLU of a 600 x 262144 float32 tensor (600 MB) returned as 600 row tensors of 1 MB: more outputs than
    a ring can name (doorbell.MAX_OFFSETS, 511). Every timed call's outputs are then copied
    by the child into the slot, 600 copy_ launches in the reference's own loop too, and
    that time (the child's _copy_ns, refunded whole: timing_plan.refunded_gap) is in the
    reference's gap (redteam21 attack 4)."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return tuple(torch.relu(x).unbind(0))


batch_size = 600
dim = 262144


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
