import torch


def leaky_relu(input, negative_slope=0.02):  # the wrong default: only the default-argument case differs
    return torch.where(input >= 0, input, input * negative_slope)
