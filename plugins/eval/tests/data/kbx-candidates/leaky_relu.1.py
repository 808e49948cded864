# expect: numerical_mismatch (the wrong default slope)
import torch


def leaky_relu(input, negative_slope=0.02):
    return torch.where(input >= 0, input, input * negative_slope)
