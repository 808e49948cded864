"""A loop of its own on redteam19x/relu_rowscales (x and a list of 2048 row scales, made
in the child from the call's seed: more than MAX_INLINE_VALUES). The reference's child
makes the whole input set in the bracket (the scales, then randn of x) to take the list:
inputs_ms, refunded whole until a43541c. This loop uses every input honestly but makes only what it
needs: the scales, drawn again from the call's seed (the first draws of torch's
generator), x read from the slot. Its report's event time is cut to LIE_MS (the control
is this file with `LIE_MS = None`)."""
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
            self._send({"prepared_for": command["prepare"]})
            continue
        if "call" not in command:
            return command
        began = time.perf_counter()
        x = _views[slot][0]
        generator = torch.Generator().manual_seed(int(command["seed"]))
        scales = torch.rand(x.shape[0], generator=generator).add_(0.5)
        out = _kept.get("out")
        if out is None:
            out = _kept["out"] = torch.empty_like(x)
        torch.clamp(x, min=0.0, out=out)
        out.mul_(scales.unsqueeze(1))
        ms = (time.perf_counter() - began) * 1e3
        self._send({"called": command["call"], "ms": min(ms, LIE_MS) if LIE_MS is not None else ms,
                    "tail_ms": 0.0, "outputs_at": [out.data_ptr()]})


_child.CandidateChild._timed_loop = _lean_loop


class ModelNew(torch.nn.Module):
    def forward(self, x, scales):
        return torch.relu(x) * torch.tensor(scales, dtype=x.dtype).unsqueeze(1)
