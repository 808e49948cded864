import torch

# Hostile (issue 19, spot checks): after its trials, skips the work on every other timed
# call and returns fresh garbage (never the same bytes twice, so no repeat gives it away):
# only a spot check of a skipped call catches it.
TRIALS = 2


class ModelNew(torch.nn.Module):
    def __init__(self, *args):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        if self.calls > TRIALS and self.calls % 2:
            return torch.rand_like(x)
        return torch.relu(x)
