import torch


def leaky_relu(input, negative_slope=0.01):
    return torch.clamp(input, min=0) + torch.clamp(input, max=0) * negative_slope
