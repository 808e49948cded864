"""The reference's work, each timed call's event time reported 1.5% short: aimed at the
within-noise band (1, confirm_speedup], where a first loop's speedup counts as 1.0 with
no confirmation loop. Whatever lands above 1 must have been confirmed."""
import torch
import torch.nn as nn

import kforge_harness.candidate.candidate as _child

_original = _child.CandidateChild._timed_call


def _timed_call(self, model, call):
    report = _original(self, model, call)
    if "called" in report:
        report["ms"] = report["ms"] * 0.985
    return report


_child.CandidateChild._timed_call = _timed_call


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
