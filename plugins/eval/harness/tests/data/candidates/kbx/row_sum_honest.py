import torch


def row_sum(input, dim=-1, keepdim=False):
    return input.double().sum(dim=dim, keepdim=keepdim).to(input.dtype)
