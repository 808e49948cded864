"""Honest: its output is made on another thread, whose allocations do not go to the
arena (handover/arena.py routes the main thread's): copied into the slot by the child,
at its own cost, and flagged outputs_copied_in_child."""
import threading

import torch


class ModelNew(torch.nn.Module):
    def forward(self, x):
        made = []
        worker = threading.Thread(target=lambda: made.append(torch.relu(x)))
        worker.start()
        worker.join()
        return made[0]
