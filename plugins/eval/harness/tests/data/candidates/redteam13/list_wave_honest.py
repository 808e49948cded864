"""Control: the task's own function, nothing else (speedup about 1)."""
import torch


def list_wave(values, scale):
    v = torch.tensor(values, dtype=torch.float32)
    return torch.sin(v * scale) * v + torch.tanh(v)
