"""The control of lean_loop: the same ReLU into one output kept across calls (nothing
allocated or freed in a call), through the harness's own timed loop, its events honest."""
import torch

_kept = {}


class ModelNew(torch.nn.Module):
    def forward(self, x):
        out = _kept.get("out")
        if out is None or out.shape != x.shape:
            out = _kept["out"] = torch.empty_like(x)
        return torch.clamp(x, min=0.0, out=out)
