"""A loop of its own on a GPU that writes a call's outputs straight into the output slot.

The harness's child copies a call's outputs into the slot after the events (the clock's
bound copy, then a whole-device sync), and that copy is no part of harness_ms: it "grows
with the bytes" and stays refunded whole with the reference's gap (README, "What it does
not protect": "the candidate hides up to the cost of one copy of its outputs"). This loop
makes its views of the input and output slots in the preparation and, in the bracket,
computes x.repeat(1, 64) into the output slot's view (torch.Tensor.copy_ of a broadcast
view: one write of the output), syncs, rings the task host's doorbell and reports
LIE_MS. What the clock sees is the forward alone, less the reference's copy of 4 GB
(twice the forward's bytes) and less the refunded harness work: at or below zero, so
the charge is the resolution floor (timing_plan.resolution_ms), whatever the forward.

Its control was the same loop with the output made in a tensor of its own and copied
into the slot by the clock's copy, as the harness's loop then did (the same expand
kernel: a control of x.repeat's own kernel measured 2.86 ms, the expand 2.87 to 2.94).

Seen on an H200 (the lead's working tree of 01:20 UTC, via the device tool;
4 GB out, reference 2.62 ms, its gap 4.0 to 6.1 ms, reference_harness_ms 0.08 to 0.14):
the honest ModelNew in the harness's loop 1.0; the control 0.913x, 0.897x, 0.914x
(candidate_ms 2.88, 2.94, 2.87, charged 0); this loop 5.45x, 4.14x, 3.05x (candidate_ms
0.48, 0.63, 0.86, all of it timing_charged_ms; flags speedup_confirmed,
below_clock_resolution): its kernel takes what the control's does (about 2.9 ms), and
the clock charges 0.5 to 0.9 of it. Not capped by the floor: the floor is 0.1 ms here.
Before the fair control (x.repeat in the control): 1.96x and 2.35x.

Since the arena (handover/arena.py) the harness's loop copies nothing in the child: the
task host reads the outputs where they lie, the reference's gap holds no copy, and the
control is the honest ModelNew in the harness's own loop."""

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
                x = self.session.lend_inputs(self.buffers.get(f"input{slot}"), command["inputs"])(None, None)[0]
                _views[slot] = x
            if "out" not in _kept and command.get("output") is not None:
                _kept["out"] = self._output_views(command["output"])[1][0]
            self._send({"prepared_for": command["prepare"]})
            continue
        if "call" not in command:
            return command
        x = _views[slot]
        out = _kept["out"]
        torch.cuda.synchronize()
        rows, cols = x.shape
        out.view(rows, 64, cols).copy_(x.view(rows, 1, cols).expand(rows, 64, cols))
        torch.cuda.synchronize()
        self._ring()
        self._send({"called": command["call"], "ms": LIE_MS, "tail_ms": 0.0})


_child.CandidateChild._timed_loop = _lean_loop


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return x.repeat(1, 64)
