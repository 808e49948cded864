import torch
import torch.nn as nn


class Model(nn.Module):
    """RMSNorm over the last dimension: y = x / sqrt(mean(x^2) + eps) * weight."""

    def __init__(self, hidden_size: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.randn(hidden_size))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean_square = torch.mean(x * x, dim=-1, keepdim=True)
        return x * torch.rsqrt(mean_square + self.eps) * self.weight


batch_size = 16
seq_len = 2048
hidden_size = 4096
eps = 1e-6


def get_inputs():
    return [torch.randn(batch_size, seq_len, hidden_size)]


def get_init_inputs():
    return [hidden_size, eps]
