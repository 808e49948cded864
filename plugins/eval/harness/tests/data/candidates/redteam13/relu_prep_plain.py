"""Control for relu_prep_shaped: PREP_S in every preparation (unshaped), the honest ReLU."""
import time

import torch
import torch.nn as nn

import kforge_harness.candidate.candidate as _child

PREP_S = 0.02
_original = _child.CandidateChild._prepare_call


def _prepare_call(self, command):
    prepared = _original(self, command)
    time.sleep(PREP_S)
    return prepared


_child.CandidateChild._prepare_call = _prepare_call


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
