"""redteam6's handover_fused without an import statement of the harness: the child has
already imported kforge_harness, so its modules sit in sys.modules; a python candidate's
L1 has only the harness-import rule (introspection/sys-use are for triton/cpp/cuda) and
the audit hook has no event for reading sys.modules or setting a class attribute.
The replaced CandidateChild._hand_over computes relu straight into the output slot."""
import sys

import torch

_pending = {}
_child = sys.modules["kforge_" + "harness.candidate.candidate"]
_handover = sys.modules["kforge_" + "harness.handover"]


_original = _child.CandidateChild._hand_over


def _hand_over(self, out, command, located=None):
    if command.get("output") is None:
        return None
    if located is not None:
        # Where the task host reads the outputs out of this process (handover/read.py,
        # `located` given) there is no copy to fuse with: the work is done here, into a
        # tensor of its own, which is then handed over as the harness would.
        target = torch.empty_like(_pending["x"])
        torch.clamp(_pending.pop("x"), min=0.0, out=target)
        return _original(self, target, command, located)
    layout = _handover.Layout.from_json(command["output"])
    views = [v for v in _handover.views(self.buffers["output"], layout) if isinstance(v, torch.Tensor)]
    torch.clamp(_pending.pop("x"), min=0.0, out=views[0])
    return None


_child.CandidateChild._hand_over = _hand_over


class ModelNew(torch.nn.Module):
    def forward(self, x):
        _pending["x"] = x
        return x
