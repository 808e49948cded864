# Hostile: hands over each trial's output as a FIFO instead of a file (the harness's own
# writer patched in its process): a judge that opens it waiting for a writer would hang
# until its own time limit, holding a judge from every other request, and then be blamed
# as the harness's failure.
import os

import torch

from kforge_harness.candidate import candidate
from kforge_harness.judge import outputs

_write_leaves = candidate.write_leaves


def _fifo_leaves(values, directory, prefix):
    leaves = _write_leaves(values, directory, prefix)
    path = os.path.join(directory, outputs.leaf_file(prefix, 0))
    os.unlink(path)
    os.mkfifo(path)
    return leaves


candidate.write_leaves = _fifo_leaves


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
