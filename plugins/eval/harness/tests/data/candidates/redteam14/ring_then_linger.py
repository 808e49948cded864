"""An honest ReLU whose child lingers 50 ms after ringing the task host's doorbell
(handover/doorbell.py) and before it reports each timed call: the call's bracket closes
when the host has copied the outputs, which it does at the ring, so the linger is in no
call's time (and the outputs judged are those the ring found)."""
import time

import torch
import torch.nn as nn

import kforge_harness.candidate.candidate as _child

LINGER_S = 0.05


def _timed_loop_lingering(original):
    def loop(self, model):
        ring = self._ring

        def ring_then_linger(*where):
            ring(*where)
            time.sleep(LINGER_S)
        self._ring = ring_then_linger
        try:
            return original(self, model)
        finally:
            self._ring = ring
    return loop


_child.CandidateChild._timed_loop = _timed_loop_lingering(_child.CandidateChild._timed_loop)


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.clamp(x, min=0.0)
