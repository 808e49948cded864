"""Trims the harness's own code around each timed call and lies about the call's time.

The candidate replaces CandidateChild._timed_loop (a class attribute, looked up when the
child's command loop reaches a {"time": ...} command) with a lean loop of its own: the
input slots' views made once per slot and kept (the layout is the same every call), the
ReLU computed straight into one output kept across calls (nothing allocated or freed),
no feed, no hand-over checks, no synchronisation, a minimal report with "ms": 0 (its
events say nothing; the server's clock alone times it), the outputs read by the task
host (the CPU's read hand-over). The ReLU is honest: every call's outputs are the ReLU
of that call's inputs, read by the task host where the report says they lie.

What the reference's loop spends around its calls in its child's Python inside the
bracket is its gap, refunded to every candidate by charged(); what this loop does not
spend there is the same amount of the ReLU's time that no clock charges. Written first
against c95cb44, when the layouts were parsed, the views made and the previous output
freed inside the bracket; rewritten for the prepared calls (the `prepare` command),
which moved that work out of it. `LIE_MS = None` (red team 20's control) reports the
call's time as measured instead."""
import time

import torch

import kforge_harness.candidate.candidate as _child

LIE_MS = 0.0
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
                _views[slot] = self.session.lend_inputs(self.buffers.get(f"input{slot}"),
                                                        command["inputs"])(None, None)[0]
            self._send({"prepared_for": command["prepare"]})
            continue
        if "call" not in command:
            return command
        began = time.perf_counter()
        x = _views[slot]
        out = _kept.get("out")
        if out is None:
            out = _kept["out"] = torch.empty_like(x)
        torch.clamp(x, min=0.0, out=out)
        ms = (time.perf_counter() - began) * 1e3
        self._send({"called": command["call"], "ms": ms if LIE_MS is None else LIE_MS,
                    "tail_ms": 0.0, "outputs_at": [out.data_ptr()]})


_child.CandidateChild._timed_loop = _lean_loop


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.clamp(x, min=0.0)
