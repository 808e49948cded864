"""Honest (a triton candidate): torch.compile with CUDA graphs (mode "reduce-overhead"): its graphs share the
pool torch.cuda.graph_pool_handle() gives, which the arena holds (handover/arena.py)."""
import torch


@torch.compile(mode="reduce-overhead")
def _relu(x):
    return torch.relu(x * 2.0) * 0.5


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return _relu(x).clone()
