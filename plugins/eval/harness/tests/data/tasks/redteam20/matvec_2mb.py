import torch
import torch.nn as nn


class Model(nn.Module):
    """y = x W^T with W 512 x 1024 float32 (2 MB, a core's L2 here) and x 4 rows: a forward
    that reads its weights once, memory-bound (redteam20: weights warmed in the call's
    preparation, where no clock runs and the CPU has no flush)."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features, bias=False)

    def forward(self, x):
        return self.linear(x)


batch_size = 4
in_features = 1024
out_features = 512


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
