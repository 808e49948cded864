import torch

# Hostile (issue 12, timing): after the trials, remembers each output by its input's
# data pointer and returns it whenever that pointer comes back. Every timed call that
# reuses an input buffer then costs nothing: its output is stale.
TRIALS = 2


class ModelNew(torch.nn.Module):
    def __init__(self, *args):
        super().__init__()
        self.calls = 0
        self.by_pointer = {}

    def forward(self, x):
        self.calls += 1
        if self.calls > TRIALS and x.data_ptr() in self.by_pointer:
            return self.by_pointer[x.data_ptr()]
        out = torch.relu(x)
        self.by_pointer[x.data_ptr()] = out
        return out
