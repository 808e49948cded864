"""Control: the task's own function (speedup about 1)."""
import torch


def tensor_list_sum(xs, scale):
    return torch.stack(xs).sum(0) * scale
