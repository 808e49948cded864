"""Measures timing_plan.Loop.seen's charge for preparations shaped against its rule.

The preparations' charge is their median less the reference's, less a noise of
3 * (the reference's MAD + this loop's MAD) / sqrt(n) (n = 20 timed calls by default:
a factor 0.67). This candidate spends PREP_S in the preparation of 11 of every 20 timed
calls (standing for work a preparation could do for its call; the other 9 would do it in
their brackets, which leaves the median bracket a fast one), and pads 9 of those 11 by
1.5 * PREP_S more: the median lands on an unpadded one (PREP_S), and the MAD is PREP_S,
so the charge is about a third of PREP_S. The forward is the honest ReLU: any charge is
the preparations'. Compare relu_prep_plain (PREP_S in every preparation, unshaped)."""
import time

import torch
import torch.nn as nn

import kforge_harness.candidate.candidate as _child

WARMUP = 3
PREP_S = 0.02
_original = _child.CandidateChild._prepare_call


def _prepare_call(self, command):
    prepared = _original(self, command)
    j = int(command["prepare"]) - WARMUP
    if j >= 0 and j % 20 < 11:
        time.sleep(PREP_S)
        if j % 20 >= 2:
            time.sleep(1.5 * PREP_S)
    return prepared


_child.CandidateChild._prepare_call = _prepare_call


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
