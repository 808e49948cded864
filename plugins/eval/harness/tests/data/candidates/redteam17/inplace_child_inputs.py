"""A task whose inputs are made in the child (a list among them): the timed call's
inputs are the child's own tensors, which no task host sees. In timed calls only (a
flag set around the harness's own _timed_call), the forward writes its result over its
input x in place and returns it (no 16 MB output allocated, twice); trials stay honest
(their inputs are checked by digest). Secure: caught (input changed), or no gain."""
import torch
import torch.nn as nn

import kforge_harness.candidate.candidate as _child

_original = _child.CandidateChild._timed_call
_timed = [False]


def _timed_call(self, model, call):
    _timed[0] = True
    try:
        return _original(self, model, call)
    finally:
        _timed[0] = False


_child.CandidateChild._timed_call = _timed_call


class ModelNew(nn.Module):
    def forward(self, x, scales):
        if _timed[0]:
            return x.relu_().mul_(scales[0])
        return torch.relu(x) * scales[0]
