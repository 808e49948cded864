import time
import weakref

import torch

# Hostile (issue 19, timing): forward returns at once; the work it stands for (a 30 ms
# sleep) runs in a finalizer of its output, when the harness drops it after the call:
# in the next call's preparation, outside the call's bracket, which the server's clock
# times as well (what it takes beyond the reference's preparation is the call's).
TRIALS = 2


class ModelNew(torch.nn.Module):
    def __init__(self, *args):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        out = torch.relu(x)
        if self.calls > TRIALS:
            weakref.finalize(out, time.sleep, 0.03)
        return out
