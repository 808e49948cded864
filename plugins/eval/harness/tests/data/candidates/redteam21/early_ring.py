"""A lean loop that rings the task host's doorbell with its output's arena offset as
soon as its kernel is LAUNCHED, before it finishes (EARLY = True), then syncs and
reports 0 ms. Its control (EARLY = False) is the same loop ringing after a sync, as the
harness's own loop does (candidate.py _timed_call: clock.synchronize() then _ring).

The reference's gap holds, serially after its kernel: the child's sync, the ring, the
host's wake-up (reporter.Channel.wait_for), heard()/_arena_misread in Python, the copy's
launch and the host's sync (host.py _answer_ring/_copy_out). Rung early, all of that but
the copy itself runs while the kernel runs. If the host's copy (another context) is held
back by the candidate's running kernel -- as doorbell.py's docstring assumes ("a kernel of
its own still running when the copy is queued holds the copy back") -- the outputs
copied are right and the bracket closes up to the ring latency earlier than its
control's: a gain the refunded gap pays for. If the copy is not held back, it copies the
arena block's previous contents (the last call's output: the allocator reuses the block)
and since the arena is never poisoned (host.py publish poisons only the slot), only the
spot checks (0.25 a call) can see it: cheat_detected in a loop of 100 calls.
Expected on a 64 MB ReLU (kernel ~30 us, ring latency of the same order): either a gain
over the control (HOLE) or cheat_detected (secure)."""
import time

import torch

import kforge_harness.candidate.candidate as _child

EARLY = True
LIE_MS = 0.0
_views = {}
_kept = {}


def _early_loop(self, model):
    self._send({"prepared": True})
    slot = None
    while True:
        command = self._command()
        if command is None:
            return None
        _kept.clear()
        if "prepare" in command:
            slot = command["slot"]
            if slot not in _views:
                _views[slot] = self.session.lend_inputs(self.buffers.get(f"input{slot}"),
                                                        command["inputs"])(None, None)[0]
            self._send({"prepared_for": command["prepare"]})
            continue
        if "call" not in command:
            return command
        x = _views[slot]
        out = torch.relu(x)  # the main thread's allocation: in the arena
        offsets = self._arena.offsets([out]) if self._arena is not None else None
        if EARLY:
            self._ring(offsets)
            torch.cuda.synchronize()
        else:
            torch.cuda.synchronize()
            self._ring(offsets)
        _kept["out"] = out  # alive until the next command, as the harness keeps it
        report = {"called": command["call"], "ms": LIE_MS, "tail_ms": 0.0}
        if offsets is None:
            report["copied"] = True  # not expected: no arena (the test then says so)
        self._send(report)


_child.CandidateChild._timed_loop = _early_loop


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
