"""Control of numbers_ahead: the reference's forward."""
import torch


class ModelNew(torch.nn.Module):
    def forward(self, x, coeffs):
        c = torch.tensor(coeffs, dtype=torch.float32)
        return x * torch.outer(c, c[:256]).sum()
