import torch
import torch.nn as nn


class Model(nn.Module):
    """A 6 GB activation: a 64 MB input widened 24x by a linear layer, then summed."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.linear(x)).sum(dim=1)


batch_size = 65536
in_features = 256
out_features = 24576


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
