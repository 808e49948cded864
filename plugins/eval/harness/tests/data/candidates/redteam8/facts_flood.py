"""Slows the server for every other job: an honest ReLU whose timed calls' reports each
carry a dict "facts" of 1.1M integers (2.2 MB a line, under the 8 MB line and 64 MB
total limits). The single-threaded server decodes each, walks it (reporter.decode),
re-encodes it for the task host (protocol._for_the_wire in Python, json.dumps), and the
task host decodes it: a few hundred ms a call during which no other job's message is
read, so another job's timed calls (an honest candidate's, the reference's) carry the
stall in their brackets. The child's own encoding is skipped (protocol.encode replaced)."""
import json

import torch

import kforge_harness.candidate.candidate as _child
from kforge_harness import protocol

N = 1_100_000
_FRAGMENT = json.dumps({"pad": [0] * N}, separators=(",", ":"))
_encode = protocol.encode
_MARK = {"pad": None}


def _cheap_encode(obj):
    if isinstance(obj, dict) and "called" in obj and obj.get("facts") is _MARK:
        rest = dict(obj)
        del rest["facts"]
        return json.dumps(rest, separators=(",", ":"))[:-1] + ',"facts":' + _FRAGMENT + "}\n"
    return _encode(obj)


protocol.encode = _cheap_encode
_original = _child.CandidateChild._hand_over


def _hand_over(self, out, command, located=None):
    if "call" in command:
        self.session.output_facts = lambda: _MARK
    return _original(self, out, command, located)


_child.CandidateChild._hand_over = _hand_over


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.clamp(x, min=0.0)
