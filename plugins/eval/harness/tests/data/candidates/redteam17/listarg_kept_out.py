"""Control for inplace_*: inputs left unchanged, the result written into one output
tensor of the candidate's own, kept and returned at every call (no allocation)."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.buf = None

    def forward(self, x, scales):
        if self.buf is None or self.buf.shape != x.shape:
            self.buf = torch.empty_like(x)
        torch.clamp(x, min=0, out=self.buf)
        return self.buf.mul_(scales[0])
