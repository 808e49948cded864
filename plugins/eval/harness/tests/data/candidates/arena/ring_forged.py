"""Names offsets of its own in the ring that tells the task host where its outputs lie
(the harness's Arena.offsets replaced): beyond the arena (SHIFT None: the host refuses
to read there, cheat_detected), or SHIFT bytes past where they lie (what is read there
is judged as its output: its first checked call fails it)."""
import torch

from kforge_harness.handover import arena

SHIFT = None
_offsets = arena.Arena.offsets


def _forged(self, tensors):
    found = _offsets(self, tensors)
    if found is None:
        return None
    return [(1 << 56) - 4096 if SHIFT is None else offset + SHIFT for offset in found]


arena.Arena.offsets = _forged


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
