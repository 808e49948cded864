import torch
import torch.nn as nn


class Model(nn.Module):
    """ReLU, its result cast to the dtype given beside x (a torch.dtype argument, as many
    kernels take one). A torch.dtype is no value a layout describes: the child makes the
    call's inputs from its seed inside the bracket to take it, x's randn included."""

    def __init__(self):
        super().__init__()

    def forward(self, x, dtype):
        return torch.relu(x).to(dtype)


rows = 1024
cols = 4096


def get_inputs():
    return [torch.randn(rows, cols), torch.float32]


def get_init_inputs():
    return []
