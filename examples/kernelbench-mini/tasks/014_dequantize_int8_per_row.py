import torch
import torch.nn as nn


class Model(nn.Module):
    """Dequantizes an int8 matrix with one float scale per row: y[i, j] = q[i, j] * scale[i]."""

    def __init__(self):
        super().__init__()

    def forward(self, q: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        return q.to(torch.float32) * scale.unsqueeze(1)


rows = 16384
cols = 16384


def get_inputs():
    q = torch.randint(-128, 128, (rows, cols), dtype=torch.int8)
    scale = torch.rand(rows) * 0.05 + 0.001
    return [q, scale]


def get_init_inputs():
    return []
