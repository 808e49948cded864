"""HONEST: a ReLU whose model runs a background thread that allocates and frees small
device tensors in a loop (a prefetcher, a logger of device stats, a second stream of
work: any Python thread touching CUDA tensors), started by its first forward.

The arena's allocator was a ctypes callback (arena.py install: _ALLOC/_FREE handed to
torch._C._cuda_customAllocator; C since, harness/native/arena_allocator.c, which needs no
GIL: this stays as its regression), which the caching allocator calls INSIDE its device
mutex (DeviceCachingAllocator::malloc holds it around the pool's raw_alloc); the
callback must take the GIL to run. The main thread's torch.relu(x) releases the GIL
(torch's bindings do, around the op), takes the allocator's mutex, misses the cache
(the first output of its size: a new segment from the arena) and calls the callback, which waits for the
GIL. The background thread holds the GIL while Python frees its tensor (`del t`: the
storage's deleter, the allocator's free, which waits for the same mutex). Each waits for
what the other holds: a deadlock that no candidate's code caused -- before the arena,
no Python ran inside the allocator.

Later calls hit the cache (the same sizes), so the window is the first forward of each
new size: the trials. Expected: pass (secure). A HOLE: the child hangs until its wall-clock limit (status
timeout, or whatever a hung call is judged), an honest candidate failed by the harness."""
import threading

import torch

CHURN = True


def _churn(device):
    while True:
        t = torch.empty(1 << 18, device=device)
        del t


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.worker = None

    def forward(self, x):
        if CHURN and self.worker is None:
            self.worker = threading.Thread(target=_churn, args=(x.device,), daemon=True)
            self.worker.start()
        return torch.relu(x)
