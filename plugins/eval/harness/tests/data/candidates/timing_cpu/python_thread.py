import threading

import torch

# Hostile (issue 12, timing): a Python thread started with the model works through a
# queue of inputs; forward hands the input over and returns an output buffer that the
# thread fills after the call returned (on a CPU, the trials' synchronisation is the
# thread finishing before the hand-over reads the buffer).


class ModelNew(torch.nn.Module):
    def __init__(self, *args):
        super().__init__()
        self.work = []
        self.ready = threading.Event()
        self.done = threading.Event()
        self.worker = threading.Thread(target=self._loop, daemon=True)
        self.worker.start()

    def _loop(self):
        while True:
            self.ready.wait()
            self.ready.clear()
            x, out = self.work.pop()
            out.copy_(torch.relu(x))
            self.done.set()

    def forward(self, x):
        out = torch.empty_like(x)
        self.done.clear()
        self.work.append((x, out))
        self.ready.set()
        self.done.wait()
        return out
