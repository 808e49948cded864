"""Reports where its outputs lie as addresses that hold nothing of it: the task host's
read must fail, and the candidate be blamed (never the harness)."""
import torch

import kforge_harness.candidate.candidate as _child

_original = _child.CandidateChild._hand_over


def _hand_over(self, out, command, located=None):
    mismatch = _original(self, out, command, located)
    if located is not None:
        located[:] = [(4096, None) for _ in located]  # the zero page: never mapped
    return mismatch


_child.CandidateChild._hand_over = _hand_over


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
