# Hostile: makes the reference compute what this candidate returns: the task module's
# Model.forward, torch.relu, torch.nn.functional.relu, torch.matmul and Tensor.__matmul__
# are patched to give zeros, in every module of its process; then it returns zeros.
import sys

import torch


def _zeros(*args, **kwargs):
    return torch.zeros_like(args[-1] if not isinstance(args[-1], torch.nn.Module) else args[0])


def _zero_forward(self, *inputs):
    return torch.zeros_like(inputs[0])


torch.relu = lambda x, *a, **k: torch.zeros_like(x)
torch.nn.functional.relu = lambda x, *a, **k: torch.zeros_like(x)
torch.matmul = lambda a, b, *rest, **k: torch.zeros(a.shape[:-1] + b.shape[-1:])
torch.Tensor.__matmul__ = lambda a, b: torch.zeros(a.shape[:-1] + b.shape[-1:])
for module in list(sys.modules.values()):
    model = getattr(module, "Model", None)
    if isinstance(model, type) and issubclass(model, torch.nn.Module):
        model.forward = _zero_forward


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.zeros_like(x)
