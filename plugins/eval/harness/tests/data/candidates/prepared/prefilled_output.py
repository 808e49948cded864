"""Writes the output slot while its calls are prepared (awake, no clock running), then
leaves half of each timed call's output unwritten. Run where the outputs are copied into
the slot by the child (the task unreadable_outputs forces that on the CPU; a GPU always
does): the preparation fills the slot with zeros, and the replaced hand-over copies only
the first half of the ReLU. Were the slot poisoned before the preparation (at the task
host's `fill`), the zeros would hide that half of every output was never written: only
the spot checks, drawn for a quarter of the calls, would see it. Poisoned when the call's
inputs are published, inside its bracket, every call's unwritten half is poison."""
import torch

import kforge_harness.candidate.candidate as _child

_original_prepare = _child.CandidateChild._prepare_call
_original_hand_over = _child.CandidateChild._hand_over


def _prepare_call(self, command):
    prepared = _original_prepare(self, command)
    if not command.get("read"):
        self.buffers["output"].raw.zero_()
    return prepared


def _hand_over(self, out, command, located=None):
    if "call" not in command or located is not None:
        return _original_hand_over(self, out, command, located)
    _, views = command["output_views"]
    half = views[0].shape[0] // 2
    views[0][:half].copy_(out[:half])
    return None


_child.CandidateChild._prepare_call = _prepare_call
_child.CandidateChild._hand_over = _hand_over


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
