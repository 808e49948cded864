"""slow_relu_honest's work (about 0.2x the reference on relu 512 x 1024), with every
timed call reported at a microsecond: the child's clock is replaced on the
CandidateChild instance (reached through a replaced class method, `_prepare_call`, which
gets `self`). The server's clock bounds the report (timing_plan.charged): the candidate's
time is raised to what the clock shows, but "never above the reference's median", so a
candidate slower than the reference is charged the reference's own time at most:
speedup 1.0 instead of 0.2, and 1.0 is not above confirm_speedup, so nothing is
measured again. Under 2 ms of hidden work per call the gap bound does not reject it
(anticheat.timing: max(bound, reference gap + max(event, 2 ms)))."""
import torch

import kforge_harness.candidate.candidate as _child

_original = _child.CandidateChild._prepare_call


def _fake_time_call(call):
    return call(), 0.001, 0.0, 0.0


def _prepare_call(self, command):
    self._time_call = _fake_time_call
    return _original(self, command)


_child.CandidateChild._prepare_call = _prepare_call


class ModelNew(torch.nn.Module):
    def forward(self, x):
        waste = torch.exp(x)
        return x * (x > 0) + 0.0 * waste[0, 0]
