import torch
import torch.nn as nn


class Model(nn.Module):
    """A copy of a 256 x 1048576 float32 tensor (1 GiB) returned as its 256 rows of 4 MiB.
    x.clone() is an empty_like and a copy_, which torch does with cudaMemcpyAsync
    (device to device): work of a copy engine, not of a kernel, in the candidate's
    context. The task host's probe (host.py _heard) is a kernel; the question is whether
    it waits for a copy engine's work of another context (redteam22 attack 2). 256
    outputs: the host's answer (256 offsets checked, 256 copies queued) is long."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return tuple(x.clone().unbind(0))


batch_size = 256
dim = 1048576


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
