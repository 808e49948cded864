import torch
import torch.nn as nn


class Model(nn.Module):
    """KernelBench level1/100_HingeLoss's pattern: predictions (batch, *input_shape) times
    targets (batch,) broadcast only while batch_size == input_shape[0]: two constants
    that must shrink together."""

    def forward(self, predictions, targets):
        return torch.mean(torch.clamp(1 - predictions * targets, min=0))


batch_size = 32768
input_shape = (32768,)


def get_inputs():
    return [torch.rand(batch_size, *input_shape),
            torch.randint(0, 2, (batch_size,)).float() * 2 - 1]


def get_init_inputs():
    return []
