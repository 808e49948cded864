"""Control: the task's own function."""
import torch


def coeff_scan(coeffs):
    c = torch.tensor(coeffs, dtype=torch.float32)
    return torch.cumsum(c, 0) * 0.5 + c
