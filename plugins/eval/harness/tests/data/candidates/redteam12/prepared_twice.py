"""Says {"prepared_for": k} twice per prepare (once itself, once the harness's own
_timed_loop): the server is freezing the child when the second comes, or has opened the
bracket. The candidate's fault: it must not be the harness's (harness_error) and must not
pass."""
import torch
import torch.nn as nn

import kforge_harness.candidate.candidate as _child

_original = _child.CandidateChild._prepare_call


def _prepare_call(self, command):
    prepared = _original(self, command)
    self.channel.send({"prepared_for": command["prepare"]})
    return prepared


_child.CandidateChild._prepare_call = _prepare_call


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.clamp(x, min=0.0)
