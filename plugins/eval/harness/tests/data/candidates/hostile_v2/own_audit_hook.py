"""Adds an audit hook of its own, which runs on every audited event of the process, inside and between calls."""
import sys

import torch

_events = []
sys.addaudithook(lambda event, args: _events.append(event) if len(_events) < 100 else None)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
