"""ReLU whose reference is slow where the task host recomputes it for a trial's fill (its
outputs did not fit the host's budget, kept_bytes): a heavy task's reference, in short.
Test data for redteam10: where RT10_SPIN_LOG names a file, the task host writes there when
such a forward ran (CLOCK_MONOTONIC), so that a test can tell what ran beside it. Its
self-test and plan (forwards not called from `fill`) are not slowed."""
import os
import sys
import threading
import time

import torch
import torch.nn as nn

SPIN_S = 14.0


def _in_fill():
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "fill" and frame.f_code.co_filename.endswith(
                os.path.join("reference", "host.py")):
            return True
        frame = frame.f_back
    return False


def _spin(until):
    a = torch.randn(384, 384)
    while time.monotonic() < until:
        a = torch.tanh(a @ a)


class Model(nn.Module):
    """ReLU, elementwise."""

    def forward(self, x):
        log = os.environ.get("RT10_SPIN_LOG")
        if log and _in_fill():
            start = time.monotonic()
            with open(log, "a", encoding="utf-8") as handle:
                handle.write(f"SPIN {start:.4f} start\n")
            threads = [threading.Thread(target=_spin, args=(start + SPIN_S,)) for _ in range(2)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            with open(log, "a", encoding="utf-8") as handle:
                handle.write(f"SPIN {start:.4f} {time.monotonic():.4f}\n")
        return torch.relu(x)


batch_size = 64
dim = 256


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
