"""Control for slow_relu_extra_in_hand_over: the same two passes, both inside the call."""
import torch

_scratch = {}


class ModelNew(torch.nn.Module):
    def forward(self, x):
        s = _scratch.get("s")
        if s is None or s.shape != x.shape:
            s = _scratch["s"] = torch.empty_like(x)
        torch.clamp(x, min=0.0, out=s)
        return torch.relu(x)
