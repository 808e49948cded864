"""The control of scales_lean_liar: the same loop of its own (the command line never
decoded whole, x the slot's view, one output kept), its report's event time as measured."""
import json
import os
import re
import socket
import time

import torch

import kforge_harness.candidate.candidate as _child
from kforge_harness import handover

LIE_MS = None  # the honest control: the same loop, its event time as measured
_views = {}
_kept = {}
_CALL = re.compile(rb'"call":\s*(\d+)')
_FIRST = re.compile(rb'"input_values":\s*"\[\s*([^,\]]+)')  # JSON text in the line


def _line(channel):
    while b"\n" not in channel.pending:
        if channel.command_socket is not None:
            chunk, fds, _, _ = socket.recv_fds(channel.command_socket, 1 << 16, 64)
            channel.received_fds.extend(fds)
        else:
            chunk = os.read(channel.command_fd, 1 << 16)
        if not chunk:
            return None
        channel.pending += chunk
    line, channel.pending = channel.pending.split(b"\n", 1)
    return line


def _lean_loop(self, model):
    self._send({"prepared": True})
    slot = None
    while True:
        line = _line(self.channel)
        if line is None:
            return None
        began = time.perf_counter()
        # The numbers come with the call's preparation since red team 18 (host.py
        # values_at_prepare): the first is taken there, the call's line has its number.
        if b'"prepare"' in line and b'"input_values"' in line:
            _kept["scale"] = handover.value_from_json(json.loads(_FIRST.search(line).group(1)))
        call = _CALL.search(line) if line.startswith(b'{"call"') else None
        if call is None:
            command = json.loads(line)
            if "prepare" in command:
                slot = command["slot"]
                if slot not in _views:
                    layout = handover.Layout.from_json(command["inputs"])
                    _views[slot] = handover.views(self.buffers.get(f"input{slot}"), layout)
                self._send({"prepared_for": command["prepare"]})
                continue
            if "call" not in command:
                return command
            raise RuntimeError("a call line not seen as one")
        x = _views[slot][0]
        scale = _kept["scale"]
        out = _kept.get("out")
        if out is None:
            out = _kept["out"] = torch.empty_like(x)
        torch.clamp(x, min=0.0, out=out)
        out.mul_(scale)
        ms = (time.perf_counter() - began) * 1e3
        self._send({"called": int(call.group(1)), "ms": min(ms, LIE_MS) if LIE_MS is not None else ms,
                    "tail_ms": 0.0, "outputs_at": [out.data_ptr()]})


_child.CandidateChild._timed_loop = _lean_loop


class ModelNew(torch.nn.Module):
    def forward(self, x, scales):
        return torch.relu(x) * scales[0]
