import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear layer, then ReLU, then a sum over the output features: (B, in) -> (B, 1)."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(torch.relu(self.linear(x)), dim=1, keepdim=True)


batch_size = 1024
in_features = 8192
out_features = 8192


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
