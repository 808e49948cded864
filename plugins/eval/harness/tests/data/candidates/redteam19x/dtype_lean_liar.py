"""A loop of its own on redteam19x/relu_to_dtype (x and a torch.dtype). The dtype is no
value a layout describes, so the reference's child makes the whole input set from the
call's seed inside every timed call's bracket (get_inputs: randn of x too) only to take
the dtype out of it; that making is inputs_ms, refunded whole until a43541c (timing_plan.refunded_gap).
This loop makes nothing: x is the slot's view, the dtype is the same at every seed (made
once, from seed 0, in the first preparation). The ReLU is honest (every call's output is
the reference's); its report's event time is cut to LIE_MS. The control is this file
with `LIE_MS = None` (its event time as measured)."""
import time

import torch

import kforge_harness.candidate.candidate as _child
from kforge_harness import handover

LIE_MS = 0.02
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
            if "dtype" not in _kept:
                _kept["dtype"] = self.session.make_inputs(0)[1]  # outside any bracket
            self._send({"prepared_for": command["prepare"]})
            continue
        if "call" not in command:
            return command
        began = time.perf_counter()
        x = _views[slot][0]
        out = _kept.get("out")
        if out is None:
            out = _kept["out"] = torch.empty_like(x, dtype=_kept["dtype"])
        torch.clamp(x, min=0.0, out=out)
        ms = (time.perf_counter() - began) * 1e3
        self._send({"called": command["call"], "ms": min(ms, LIE_MS) if LIE_MS is not None else ms,
                    "tail_ms": 0.0, "outputs_at": [out.data_ptr()]})


_child.CandidateChild._timed_loop = _lean_loop


class ModelNew(torch.nn.Module):
    def forward(self, x, dtype):
        return torch.relu(x).to(dtype)
