"""A probe, honest in its outputs: in every timed call's preparation it digests what the
slots hold and notes the prepare command's keys; in the call it digests the call's x in
its slot and says (stderr, "RT19X ...") whether any preparation before had seen it. It
runs the harness's own loop otherwise (CandidateChild._prepare_call / _timed_call
wrapped), so the forward is the ModelNew's."""
import hashlib
import sys

import torch

import kforge_harness.candidate.candidate as _child
from kforge_harness import handover

_seen = set()
_layouts = {}
_stats = {"calls": 0, "ahead": 0, "keys": set()}
_prepare, _call = _child.CandidateChild._prepare_call, _child.CandidateChild._timed_call


def _digest(tensor):
    return hashlib.sha1(tensor.contiguous().view(torch.uint8).numpy().tobytes()).hexdigest()


def _slot_x(self, slot):
    layout = _layouts.get(slot)
    mapping = self.buffers.get(f"input{slot}")
    if layout is None or mapping is None:
        return None
    views = [v for v in handover.views(mapping, layout) if isinstance(v, torch.Tensor)]
    return views[0] if views else None


def _probe_prepare(self, command):
    _stats["keys"].update(command)
    if command.get("inputs") is not None:
        _layouts[command["slot"]] = handover.Layout.from_json(command["inputs"])
    for slot in (0, 1):
        x = _slot_x(self, slot)
        if x is not None:
            _seen.add(_digest(x))
    return _prepare(self, command)


def _probe_call(self, model, call):
    x = _slot_x(self, call["slot"])
    _stats["calls"] += 1
    if x is not None and _digest(x) in _seen:
        _stats["ahead"] += 1
    report = _call(self, model, call)
    print(f"RT19X call {call['call']}: calls {_stats['calls']} ahead {_stats['ahead']} "
          f"prepare keys {sorted(_stats['keys'])} call keys {sorted(k for k in call if k not in ('lend', 'output_views', 'made', 'arguments'))}",
          file=sys.stderr, flush=True)
    return report


_child.CandidateChild._prepare_call = _probe_prepare
_child.CandidateChild._timed_call = _probe_call


class ModelNew(torch.nn.Module):
    def forward(self, x, scales):
        return torch.relu(x) * torch.tensor(scales, dtype=x.dtype).unsqueeze(1)
