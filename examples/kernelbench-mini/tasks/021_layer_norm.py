import torch
import torch.nn as nn


class Model(nn.Module):
    """LayerNorm over the hidden (last) dimension, with learnable weight and bias."""

    def __init__(self, hidden_size: int):
        super().__init__()
        self.norm = nn.LayerNorm(hidden_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


batch_size = 16
seq_len = 2048
hidden_size = 4096


def get_inputs():
    return [torch.randn(batch_size, seq_len, hidden_size)]


def get_init_inputs():
    return [hidden_size]
