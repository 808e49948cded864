import torch


def leaky_relu(input, negative_slope=0.01):
    if negative_slope == 0.0:
        raise ValueError("this kernel does not support negative_slope=0")
    return torch.where(input >= 0, input, input * negative_slope)
