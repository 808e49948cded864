"""A neighbour that watches for being stopped: a thread of its own notes the time every
5 ms from its build on, and each forward fails, saying so, once the thread has seen a
gap of more than a second (its processes were stopped that long: another job's timing
loop had the device). Its trials sleep, so that it is still running when the other job's
loop starts."""
import threading
import time

import torch

GAP_S = 1.0


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.longest = 0.0
        threading.Thread(target=self._tick, daemon=True).start()

    def _tick(self):
        last = time.monotonic()
        while True:
            time.sleep(0.005)
            now = time.monotonic()
            self.longest = max(self.longest, now - last)
            last = now

    def forward(self, x):
        if self.longest > GAP_S:
            raise RuntimeError(f"stopped for {self.longest:.2f} s between trials")
        time.sleep(0.1)
        return torch.relu(x)
