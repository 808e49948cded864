"""HONEST: a ReLU captured into a CUDA graph per input slot (the slots keep their
addresses) and replayed on the call's own inputs, its output made INSIDE the capture
(torch.relu(x) under torch.cuda.graph, the usual way to write it).

What the arena does to it: arena.install() calls torch._C._cuda_beginAllocateCurrentThreadToPool
once and never ends it, so the caching allocator's captures_underway list holds the
arena's entry (filter: this thread, every stream) for the process's life. A graph's
capture appends its own entry AFTER it, and get_pool() takes the FIRST entry whose
filter matches: on the main thread the capture's allocations go to the arena's pool,
not the graph's private pool. Either
(a) the output lies in the arena (then: not flagged, no copy, fair), but the graph's
    memory is no longer private: blocks it freed during capture go back to a pool that
    later captures on the same (class-default) capture stream share; or
(b) arena.py's docstring is right that it lies "in a CUDA graph's own pool": copied by
    the child and flagged outputs_copied_in_child, charged one 256 MB copy the reference
    does not pay (~0.5x).
Expected: pass, timed like eager within 25 % (FairnessGpuTest); the RT21 line says
which of (a)/(b) happened (the flag). A failure (capture refused, wrong values) is an
honest candidate broken by the harness."""
import torch


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.graphs = {}

    def forward(self, x):
        key = (x.data_ptr(), tuple(x.shape), x.dtype)
        if key not in self.graphs:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                torch.relu(x)  # warm-up outside the capture
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                y = torch.relu(x)
            self.graphs[key] = (graph, y)
        graph, y = self.graphs[key]
        graph.replay()
        return y
