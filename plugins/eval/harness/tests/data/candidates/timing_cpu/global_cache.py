import torch

# Hostile (issue 12, timing): after the trials, the output is computed once and kept in
# a module global; every timed call returns it.
TRIALS = 2
_CACHE = []
_CALLS = [0]


class ModelNew(torch.nn.Module):
    def __init__(self, *args):
        super().__init__()

    def forward(self, x):
        _CALLS[0] += 1
        if _CALLS[0] <= TRIALS:
            return torch.relu(x)
        if not _CACHE:
            _CACHE.append(torch.relu(x))
        return _CACHE[0]
