"""For the task redteam21/many_outputs (600 outputs: more than a ring can name,
doorbell.MAX_OFFSETS = 511). In the harness's loop every output is then copied into the
slot by the child (candidate.py _timed_call: `len(offsets) > MAX_OFFSETS` -> copied, one
clock.copy per leaf, 600 launches), in the reference's own loop as in every candidate's,
and those copies (_copy_ns, kept out of harness_ms) are refunded whole with the
reference's gap (timing_plan.refunded_gap). This lean loop computes the ReLU straight
into the slot (the 600 row leaves are packed back to back: one 600 x 1024 view), syncs,
rings "in the slot" (one byte 1, doorbell.SLOT) and reports 0 ms WITHOUT "copied": true,
so the verdict is not even flagged outputs_copied_in_child (server.py sets the flag only
from the report's word). It is red team 20's slot liar (3.05x-5.45x) reopened for any task
whose outputs do not all cross by the arena. Expected: a large speedup over the honest
ModelNew in the harness's loop (LIAR = False, the control), a HOLE."""
import torch

import kforge_harness.candidate.candidate as _child

LIAR = True
LIE_MS = 0.0
_views = {}
_kept = {}


def _slot_loop(self, model):
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
            if "out" not in _kept and command.get("output") is not None:
                views = self._output_views(command["output"])[1]
                first, last = views[0], views[-1]
                rows, cols = len(views), first.numel()
                # The leaves lie back to back (4096 bytes each, 512-aligned): one view.
                assert last.data_ptr() - first.data_ptr() == (rows - 1) * cols * first.element_size()
                _kept["out"] = torch.as_strided(first, (rows, cols), (cols, 1))
            self._send({"prepared_for": command["prepare"]})
            continue
        if "call" not in command:
            return command
        torch.clamp(_views[slot], min=0.0, out=_kept["out"])
        torch.cuda.synchronize()
        self._ring()
        self._send({"called": command["call"], "ms": LIE_MS, "tail_ms": 0.0})


if LIAR:
    _child.CandidateChild._timed_loop = _slot_loop


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return tuple(torch.relu(x).unbind(0))
