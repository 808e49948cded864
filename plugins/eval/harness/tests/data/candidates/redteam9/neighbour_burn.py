"""A neighbour that loads the machine: while ModelNew is built it keeps two threads
spinning (both of this VM's cores) for BURN_S seconds, outside any timed loop of its own
(its build is not timed, and its processes are not frozen then), then computes an honest
ReLU. Run beside another job of the same task on the same server, its load falls on
whatever of the other job is measured meanwhile (its loop, the reference's loop timed for
it) through the one task host and the shared cores."""
import threading
import time

import torch

BURN_S = 20.0


def _spin(until):
    n = 0
    while time.monotonic() < until:
        n += 1


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        until = time.monotonic() + BURN_S
        threads = [threading.Thread(target=_spin, args=(until,)) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    def forward(self, x):
        return torch.clamp(x, min=0.0)
