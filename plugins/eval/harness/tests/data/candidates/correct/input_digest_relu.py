import sys

import torch


class ModelNew(torch.nn.Module):
    """Right for every ReLU task; prints what its inputs were, so a test can tell
    whether two runs got the same inputs."""

    def __init__(self, *args):
        super().__init__()

    def forward(self, x):
        print(f"input-digest {float(x.double().sum()):.17g} {float(x[0, 0]):.17g}", file=sys.stderr)
        return torch.relu(x)
