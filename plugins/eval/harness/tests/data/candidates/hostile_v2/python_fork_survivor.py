"""Forks a child from Python that detaches (setsid) and lives on after the job, spinning."""
import os

import torch


def _detach():
    if os.fork() == 0:
        os.setsid()
        while True:
            pass


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        _detach()

    def forward(self, x):
        return torch.relu(x)
