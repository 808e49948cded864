"""Control for wake_in_publish: the same ReLU into one output tensor kept across calls,
computed in the call (the harness's own loop), nothing else."""
import torch
import torch.nn as nn

_out = {}


class ModelNew(nn.Module):
    def forward(self, x):
        out = _out.get("out")
        if out is None or out.shape != x.shape:
            out = _out["out"] = torch.empty_like(x).fill_(0)
        return torch.clamp(x, min=0.0, out=out)
