import torch
import torch.nn as nn


class Model(nn.Module):
    """Divides the whole tensor by its root mean square (one reduction over every element).

    Normalising by the RMS rather than the Frobenius norm keeps outputs near 1, so an
    absolute tolerance of 1e-4 still means something at large sizes.
    """

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rms = torch.sqrt(torch.mean(x * x))
        return x / rms


batch_size = 16
channels = 64
height = 256
width = 256


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return []
