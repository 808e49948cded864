"""Control: the task's own computation, nothing else (speedup about 1)."""
import torch


def scalar_wave(freq, phase):
    t = torch.arange(1 << 21, dtype=torch.float32)
    w = torch.sin(t * freq + phase) * torch.exp(t * -1e-7)
    return w * torch.cos(t * (freq * 0.5)) + torch.tanh(w)
