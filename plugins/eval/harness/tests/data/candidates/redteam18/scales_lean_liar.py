"""A loop of its own on redteam18/relu_kscales (x and a list of 1000 numbers drawn with
it: they cross inline, each timed call's command carries them, input_values). The
reference's child decodes the whole command line and puts the 1000 numbers back in a
list inside the call's bracket. This loop reads each call's command line itself and
never decodes the list: it takes the call's number and the first scale straight out of
the line's bytes (the only one the forward uses). The ReLU is honest, its report's
event time cut to LIE_MS. The test makes its control by replacing a line (`LIE_MS =
None`: the same loop, its event time as measured)."""
import json
import os
import re
import socket
import time

import torch

import kforge_harness.candidate.candidate as _child
from kforge_harness import handover

LIE_MS = 0.02
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
        call = _CALL.search(line) if line.startswith(b'{"call"') else None
        if call is not None:
            _kept["scale"] = handover.value_from_json(json.loads(_FIRST.search(line).group(1)))
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
