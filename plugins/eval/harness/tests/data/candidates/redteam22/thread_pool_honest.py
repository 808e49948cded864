"""HONEST: every forward runs a small helper on a worker thread (started and joined in
the call) that allocates a workspace in a MemPool of the model's own through
torch.cuda.use_mem_pool (IN_POOL set), then computes the ReLU on the main thread.
The control (IN_POOL = False) is the same helper allocating without the pool.

What handover/arena.py's _route_graphs does to it: the wrapped
_cuda_beginAllocateCurrentThreadToPool, called on the WORKER thread, steps aside: it
ends the arena's routing (which is the MAIN thread's: `end(device, ours)` ends it by
pool, whatever thread began it); when the worker's `with` ends, step_back() calls
`begin(device, ours)` = _cuda_beginAllocateCurrentThreadToPool ON THE WORKER: the arena
now routes the worker's allocations, and the main thread's go to torch's own segments
(cudaMalloc, outside the arena) until the next call's preparation (Arena.reclaim ends the
routing by pool and begins it again on the main thread), that is for the rest of this
call. The ReLU's output, allocated after the join, is outside the arena: the child
copies it into the slot and the verdict is flagged outputs_copied_in_child, every call.
Expected (unfair, a HOLE of the fair kind): flagged, charged one 256 MB copy the control
does not pay (~0.5x of the control on a 256 MB ReLU). Fair: not flagged, within 25% of
the control."""
import threading

import torch

IN_POOL = True


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = torch.cuda.MemPool() if IN_POOL else None
        self.workspace = None

    def _helper(self, device):
        torch.cuda.set_device(device)
        if self.pool is not None:
            with torch.cuda.use_mem_pool(self.pool):
                self.workspace = torch.zeros(1 << 18, device=device)
        else:
            self.workspace = torch.zeros(1 << 18, device=device)

    def forward(self, x):
        worker = threading.Thread(target=self._helper, args=(x.device,))
        worker.start()
        worker.join()
        return torch.relu(x)
