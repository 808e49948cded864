import torch


def kernel_function(input, negative_slope=0.01):
    return torch.where(input > 0, input, negative_slope * input)
