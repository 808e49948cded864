"""The reference's work through the harness's own loop, but each timed call's report
rewritten: its event time cut to 0.05 ms, and harness_ms and inputs_ms inflated to
50 ms (as if the call's bracket were mostly the harness making its inputs). The refund
must come from the reference's loop record only (timing_plan.refunded_gap)."""
import torch
import torch.nn as nn

import kforge_harness.candidate.candidate as _child

_original = _child.CandidateChild._timed_call


def _timed_call(self, model, call):
    report = _original(self, model, call)
    if "called" in report:
        report["ms"] = min(report["ms"], 0.05)
        report["harness_ms"] = 50.0
        report["inputs_ms"] = 50.0
    return report


_child.CandidateChild._timed_call = _timed_call


class ModelNew(nn.Module):
    def forward(self, x, *rest):
        out = torch.relu(x)
        if rest:
            out = out * rest[0][0]
        return out
