import torch
import torch.nn as nn


class Model(nn.Module):
    """ReLU of a 256 x 1048576 float32 tensor (1 GiB) returned as its 256 rows of 4 MiB:
    256 outputs, which a ring names one by one (doorbell.MAX_OFFSETS is 511). The task
    host's answer to a ring then checks 256 offsets and queues 256 copies, one Python
    slice-and-copy_ at a time (host.py _arena_misread, _copy_out): a millisecond or more
    of CPU time after it heard the ring, longer than the 0.5 ms kernel, that the
    reference's loop pays in its gap and every candidate gets refunded (redteam22
    attack 1)."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return tuple(torch.relu(x).unbind(0))


batch_size = 256
dim = 1048576


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
