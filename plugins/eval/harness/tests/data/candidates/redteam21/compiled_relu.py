"""HONEST: torch.compile(mode="reduce-overhead") of a ReLU: inductor's kernel replayed
through cudagraph trees, which allocate from a memory pool of their own
(torch._inductor.cudagraph_trees: _use_cuda_memory_pool_manager calls
torch._C._cuda_beginAllocateCurrentThreadToPool for their warm-up and records into
their pool, then checkpoints that pool's state).

The arena's entry (arena.install: begun on the main thread, never ended) comes first in
the caching allocator's captures_underway list and matches every allocation of the main
thread, so the trees' pool never receives what they allocate: their bookkeeping of their
pool (liveness, checkpointed state) no longer describes where their tensors lie. Also,
with captures_underway never empty the allocator never processes its cross-stream events
(malloc's process_events runs only while no capture is underway) and defers every free of
a block with stream uses "until no capture": they are never freed.
Expected: pass, timed no worse than eager's 0.75 (FairnessGpuTest). A failure or a crash
is an honest, common optimisation broken by the harness."""
import torch


def _relu(x):
    return torch.relu(x)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.compiled = torch.compile(_relu, mode="reduce-overhead")

    def forward(self, x):
        return self.compiled(x)
