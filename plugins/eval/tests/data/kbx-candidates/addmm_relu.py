import torch


def addmm_relu(bias, a, b, alpha=1.0):
    return torch.clamp(bias + alpha * torch.mm(a, b), min=0)
