import math

import torch
import torch.nn as nn


class Model(nn.Module):
    """ReLU of x scaled by the number a dict holds under the key math.inf. The dict crosses
    by buffer (handover/tree.py): its skeleton keeps its keys, and the wire (protocol
    encode) writes a non-finite float as null."""

    def __init__(self):
        super().__init__()

    def forward(self, x, scales):
        return torch.relu(x) * scales[math.inf]


rows = 256
cols = 1024


def get_inputs():
    return [torch.randn(rows, cols), {math.inf: float(torch.rand(1)) + 0.5, "one": 1.0}]


def get_init_inputs():
    return []
