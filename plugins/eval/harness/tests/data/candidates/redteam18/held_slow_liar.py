"""held_lean_liar's loop, its ReLU computed REPEAT times over (a kernel several times
slower than the reference's), its report's event time cut to 0.02 ms: what the refund
of the reference's making of the inputs hides is up to that making's time (8-9 ms on
this VM), whatever the kernel does in it."""
import json
import time

import torch

import kforge_harness.candidate.candidate as _child
from kforge_harness import handover

LIE_MS = 0.02
REPEAT = 16
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
        x = _views[slot][0]
        # The call's numbers come as JSON text (a few of them: with the call).
        scale = handover.value_from_json(json.loads(command["input_values"])[0])
        out = _kept.get("out")
        if out is None:
            out = _kept["out"] = torch.empty_like(x)
        for _ in range(REPEAT):
            torch.clamp(x, min=0.0, out=out)
            out.mul_(scale)
        self._send({"called": command["call"], "ms": LIE_MS, "tail_ms": 0.0, "outputs_at": [out.data_ptr()]})


_child.CandidateChild._timed_loop = _lean_loop


class ModelNew(torch.nn.Module):
    def forward(self, held):
        return torch.relu(held.x) * held.scale
