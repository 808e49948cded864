"""Control for report_then_compute: the same ReLU into one output tensor kept across
calls, computed in the call."""
import torch
import torch.nn as nn

_out = {}


class ModelNew(nn.Module):
    def forward(self, x):
        out = _out.get("out")
        if out is None or out.shape != x.shape:
            out = _out["out"] = torch.empty_like(x)
        return torch.clamp(x, min=0.0, out=out)
