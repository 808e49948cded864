# Hostile: starts a grandchild in a session of its own (setsid, double fork), named
# "kfsurvivor" so that the host can look for it, that would outlive the run and keep
# working after the verdict; returns zeros.
import ctypes
import os
import time

import torch

PR_SET_NAME = 15


def _survivor():
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            ctypes.CDLL(None).prctl(PR_SET_NAME, b"kfsurvivor", 0, 0, 0)
            while True:
                time.sleep(0.05)
        os._exit(0)
    os.wait()


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        _survivor()

    def forward(self, x):
        return torch.zeros_like(x)
