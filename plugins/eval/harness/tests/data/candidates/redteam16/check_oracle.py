"""The merged step's spot check, seen from the child: the time between its report of
call k and the command of call k+1 holds the task host's step for call k (its checks),
during which the child is stopped. A checked call's step makes the inputs again and runs
the reference on them: the candidate reads which calls were checked off its own clock,
and says so on stderr, once the call after them comes (after the draw: nothing to gain
by design, since each call's draw is independent). An honest ReLU otherwise."""
import statistics
import sys
import time

import torch
import torch.nn as nn

import kforge_harness.candidate.candidate as _child

_perf = time.perf_counter_ns
_original = _child.CandidateChild._timed_call
_seen = {"last_end": None, "gaps": []}


def _timed_call(self, model, call):
    began = _perf()
    if _seen["last_end"] is not None and call["call"] > 0:
        _seen["gaps"].append((call["call"] - 1, (began - _seen["last_end"]) / 1e6))
    if call["call"] == 0:
        _seen["gaps"] = []
    report = _original(self, model, call)
    _seen["last_end"] = _perf()
    gaps = _seen["gaps"]
    if call["call"] == 22 and gaps:
        middle = statistics.median(g for _, g in gaps)
        checked = [k for k, g in gaps if g > 2 * middle]
        print(f"RT16ORACLE median_gap_ms={middle:.3f} inferred_checked={checked} "
              f"count={len(checked)} gaps={[round(g, 1) for _, g in gaps]}", file=sys.stderr, flush=True)
    return report


_child.CandidateChild._timed_call = _timed_call


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
