# Hostile: an exception whose __str__ ends the process (exit status 0, nothing reported)
# and whose type names claim the harness and the task: the death must still be its own.
import os

import torch


class HarnessError(Exception):
    pass


class TaskError(HarnessError):
    def __str__(self):
        os._exit(0)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        raise TaskError()
