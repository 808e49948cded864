import torch
import torch.nn as nn


class Model(nn.Module):
    """Symmetric per-tensor int8 fake quantization: quantize to [-128, 127], then dequantize.

    Rounding is half-to-even (torch.round). The scale is a power of two so that x / scale is
    exact and every implementation rounds the same value.
    """

    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q = torch.clamp(torch.round(x / self.scale), -128.0, 127.0)
        return q * self.scale


batch_size = 4096
dim = 65536
scale = 0.015625


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [scale]
