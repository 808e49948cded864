"""A loop of its own (red team 9's lean loop) on a very short forward, its report cut to
LIE_MS. The slot's views are made once per slot in the preparation; in the bracket the
loop computes the ReLU straight into one output kept across calls, sends the smallest
report and lets the task host read the outputs out of it (the CPU's read hand-over): no
command decoded by the harness, no feed, no settle, no checks. The ReLU is honest.

What it tests (timing_plan.resolution_ms, below_clock_resolution): the server's clock
refunds the reference's harness work (up to max_harness_refund_ms), which this loop
leaves out, so the clock alone can go to 0 or below on a forward shorter than that work;
no candidate may be charged less than min(reference ms, reference harness ms, the cap).
The claim: a lean loop gains at most 2x (a forward just above the floor).

The test makes its control by replacing one line (`LIE_MS = None`: the same loop, its
time as measured)."""
import time

import torch

import kforge_harness.candidate.candidate as _child

LIE_MS = 0.0
_views = {}
_kept = {}


def _lean_loop(self, model):
    self._send({"prepared": True})
    slot = None
    while True:
        command = self._command()
        if command is None:
            return None
        if "prepare" in command:
            slot = command["slot"]
            if slot not in _views:
                _views[slot] = self.session.lend_inputs(self.buffers.get(f"input{slot}"),
                                                        command["inputs"])(None, None)[0]
            self._send({"prepared_for": command["prepare"]})
            continue
        if "call" not in command:
            return command
        began = time.perf_counter()
        x = _views[slot]
        out = _kept.get("out")
        if out is None:
            out = _kept["out"] = torch.empty_like(x)
        torch.clamp(x, min=0.0, out=out)
        ms = (time.perf_counter() - began) * 1e3
        self._send({"called": command["call"], "ms": ms if LIE_MS is None else LIE_MS,
                    "tail_ms": 0.0, "outputs_at": [out.data_ptr()]})


_child.CandidateChild._timed_loop = _lean_loop


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.clamp(x, min=0.0)
