import torch
import torch.nn as nn

# Stands in for a machine whose security rules forbid the task host to read a child's
# memory (tests/test_read_handover.py): every process that loads this task, the
# reference's own timing child included, reports its timed outputs at an address that
# holds nothing, so the read fails there first.
try:
    import kforge_harness.candidate.candidate as _child

    _original = _child.CandidateChild._hand_over

    def _hand_over(self, out, command, located=None):
        mismatch = _original(self, out, command, located)
        if located is not None:
            located[:] = [(4096, tensor) for _, tensor in located]
        return mismatch

    _child.CandidateChild._hand_over = _hand_over
except ImportError:  # loaded outside the harness
    pass


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


batch_size = 16
dim = 256


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
