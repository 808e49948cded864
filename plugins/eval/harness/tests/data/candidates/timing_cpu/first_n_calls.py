import torch

# Hostile (issue 12, timing): real work in the first calls only (the trials and a few
# warm-up calls), then the last result again: what is timed after them is free.
REAL_CALLS = 4


class ModelNew(torch.nn.Module):
    def __init__(self, *args):
        super().__init__()
        self.calls = 0
        self.last = None

    def forward(self, x):
        self.calls += 1
        if self.calls <= REAL_CALLS or self.last is None:
            self.last = torch.relu(x)
        return self.last
