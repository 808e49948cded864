import torch

# Hostile (issue 12, timing): after the trials, one output per input shape: the first
# timed call computes it, every later one returns it.
TRIALS = 2


class ModelNew(torch.nn.Module):
    def __init__(self, *args):
        super().__init__()
        self.calls = 0
        self.by_shape = {}

    def forward(self, x):
        self.calls += 1
        key = tuple(x.shape)
        if self.calls > TRIALS + 1 and key in self.by_shape:
            return self.by_shape[key]
        out = torch.relu(x)
        self.by_shape[key] = out
        return out
