"""For the task redteam21/inplace_relu (the reference returns x.relu_(): its output IS its
input, 512 MiB in the input slot).

MODE "fresh": torch.relu(x), a new tensor allocated by the main thread, so in the arena:
the child copies nothing and the task host copies it out of the arena.
MODE "twin": the reference's own code, x.relu_(): its output lies in the input slot, not
in the arena, so Arena.offsets (arena.py) returns None and the child copies it into the
output slot (candidate.py _timed_call), "copied": true, flagged outputs_copied_in_child.

The reference's own timing child runs the twin's code: its gap (bracket less events)
holds that child copy of 512 MiB, and charged() refunds the whole gap (the copies are
refunded whole, timing_plan.refunded_gap) to every candidate. A fresh ReLU (one pass
reading 512 MiB and writing 512 MiB, the cost of that copy) is then over-refunded by a copy
it never makes: the server's clock sees its call as about its forward LESS the copy,
about zero. With LIE = True the report says 0 ms (the harness's loop otherwise intact:
the ring, the offsets, the sync), so nothing but the clock bounds the charge: it falls
to the clock's floor (timing_plan.resolution_ms, <= max_harness_refund_ms 0.1 ms)
against ~0.22 ms of real work. LIE = False (the control): the same code, honestly
reported. Red team 20's slot liar, reopened for every task whose reference's outputs do
not lie in its arena (an input returned or changed in place: nn.ReLU(inplace=True)'s
x; a weight; more than 511 outputs; an output of another thread or a CUDA graph's pool).
Expected: the liar charged far below its control (a HOLE, like red team 20's 3a)."""
import torch

import kforge_harness.candidate.candidate as _child

MODE = "fresh"
LIE = True


def _lying(original):
    def call(self, model, command):
        report = original(self, model, command)
        if LIE and isinstance(report, dict) and "called" in report and "mismatch" not in report:
            report["ms"] = 0.0
            report["tail_ms"] = 0.0
        return report
    return call


_child.CandidateChild._timed_call = _lying(_child.CandidateChild._timed_call)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        if MODE == "fresh":
            return torch.relu(x)
        return x.relu_()
