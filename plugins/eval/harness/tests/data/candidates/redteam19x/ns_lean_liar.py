"""A loop of its own on redteam17/relu_held (Held(x, scale): an object of the task's own,
a "made" node whose parts, x and scale, are all laid out: x in the slot, scale inline in
each timed call's command, input_values). The reference's child makes the whole input
set from the seed in every timed call's bracket (get_inputs: randn of x too) only to
write the slot's x and the command's scale over the made object's; that making is
inputs_ms, refunded whole (timing_plan.refunded_gap). This loop makes nothing: x is the
slot's view, scale the command's number; the ReLU is honest (every call's output is the
reference's), its report's event time is cut to LIE_MS. The refund of the reference's
making covers the forward the report leaves out.

The test makes its control of this file by replacing a line (`LIE_MS = None`: the same
loop, its event time as measured)."""
import json
import time

import torch

import kforge_harness.candidate.candidate as _child
from kforge_harness import handover

LIE_MS = 0.02
REPEAT = 1
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
                layout = handover.Layout.from_json(command["inputs"])
                _views[slot] = handover.views(self.buffers.get(f"input{slot}"), layout)
            self._send({"prepared_for": command["prepare"]})
            continue
        if "call" not in command:
            return command
        began = time.perf_counter()
        x = _views[slot][0]
        # The call's numbers come as JSON text (a few of them: with the call).
        scale = handover.value_from_json(json.loads(command["input_values"])[0])
        out = _kept.get("out")
        if out is None:
            out = _kept["out"] = torch.empty_like(x)
        for _ in range(REPEAT):
            torch.clamp(x, min=0.0, out=out)
            out.mul_(scale)
        ms = (time.perf_counter() - began) * 1e3
        self._send({"called": command["call"], "ms": min(ms, LIE_MS) if LIE_MS is not None else ms,
                    "tail_ms": 0.0, "outputs_at": [out.data_ptr()]})


_child.CandidateChild._timed_loop = _lean_loop


class ModelNew(torch.nn.Module):
    def forward(self, held):
        return torch.relu(held.x) * held.scale
