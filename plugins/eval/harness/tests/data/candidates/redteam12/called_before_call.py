"""Reports {"called": k} in the prepare window, right after its {"prepared_for": k}
(before the call's command, before its inputs are published), with the previous call's
output's address: a report racing the freeze and the bracket. The candidate's fault: it
must not pass, and must not be the harness's."""
import torch
import torch.nn as nn

import kforge_harness.candidate.candidate as _child

_original_loop = _child.CandidateChild._timed_loop
_last = {}


def _timed_loop(self, model):
    send = self._send

    def sending(message):
        send(message)
        if "prepared_for" in message and "out" in _last:
            send({"called": message["prepared_for"], "ms": 0.0, "tail_ms": 0.0,
                  "outputs_at": [_last["out"].data_ptr()]})
    self._send = sending
    try:
        return _original_loop(self, model)
    finally:
        self._send = send


_child.CandidateChild._timed_loop = _timed_loop


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.clamp(x, min=0.0)
        _last["out"] = out
        return out
