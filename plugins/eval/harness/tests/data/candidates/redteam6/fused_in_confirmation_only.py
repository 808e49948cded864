"""Tells the confirmation loop from the first one and cheats only there: honest ReLU in
the trials and in the loop labelled "timing"; in the loop labelled "confirm" (the label
comes in the {"time"} command, read through the reporter module's `json` global) the
work moves into the replaced hand-over as in handover_fused. The smaller of the two
speedups counts (timing_plan.counted), so this should gain nothing: a check that the
confirmation's min holds against a candidate that knows which loop it is in."""
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


def _hand_over(self, out, command):
    if "x" not in _pending:
        return _original(self, out, command)
    layout = handover.Layout.from_json(command["output"])
    views = [v for v in handover.views(self.buffers["output"], layout) if isinstance(v, torch.Tensor)]
    torch.relu(_pending.pop("x"), out=views[0])
    return None


_child.CandidateChild._hand_over = _hand_over


class ModelNew(torch.nn.Module):
    def forward(self, x):
        if _state["label"] == "confirm":
            _pending["x"] = x
            return x
        return torch.relu(x)
