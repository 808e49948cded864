"""Tells the confirmation loop from the first one and behaves differently: in the loop
labelled "timing" (the label comes in the {"time"} command, read through the reporter
module's `json` global) the work moves into the replaced hand-over as in
handover_fused (alone: about 1.5x, confirmed); in the trials and in the loop labelled
"confirm" it is honest ReLU. (The other way round the confirmation never runs: an
honest first loop claims no speedup above 1.) The smaller of the two speedups counts
(timing_plan.counted), so this should gain nothing: the confirmation's min holds
against a candidate that knows which loop it is in."""
import json as _json
import types

import torch

from kforge_harness import handover
import kforge_harness.candidate.candidate as _child
import kforge_harness.protocol.reporter as _reporter

_state = {"label": None}
_pending = {}
_original = _child.CandidateChild._hand_over


def _loads(line, *args, **kwargs):
    command = _json.loads(line, *args, **kwargs)
    if isinstance(command, dict) and isinstance(command.get("time"), dict):
        _state["label"] = command["time"].get("label")
    return command


_reporter.json = types.SimpleNamespace(loads=_loads, dumps=_json.dumps)


def _hand_over(self, out, command, located=None):
    if "x" not in _pending:
        return _original(self, out, command, located)
    if located is not None:
        # Where the task host reads the outputs out of this process (handover/read.py,
        # `located` given) there is no copy to fuse with: the work is done here, into a
        # tensor of its own, which is then handed over as the harness would.
        target = torch.empty_like(_pending["x"])
        torch.clamp(_pending.pop("x"), min=0.0, out=target)
        return _original(self, target, command, located)
    layout = handover.Layout.from_json(command["output"])
    views = [v for v in handover.views(self.buffers["output"], layout) if isinstance(v, torch.Tensor)]
    torch.clamp(_pending.pop("x"), min=0.0, out=views[0])
    return None


_child.CandidateChild._hand_over = _hand_over


class ModelNew(torch.nn.Module):
    def forward(self, x):
        if _state["label"] == "timing":
            _pending["x"] = x
            return x
        return torch.relu(x)
