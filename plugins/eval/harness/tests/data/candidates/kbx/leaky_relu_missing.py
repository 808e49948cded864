import torch


def leaky(input, negative_slope=0.01):  # named unlike the task's function
    return torch.where(input >= 0, input, input * negative_slope)
