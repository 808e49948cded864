"""HONEST: a ReLU written with the routings of allocations that handover/arena.py now
stands aside for (_route_graphs: a routing begun from Python ends the arena's while it
lasts, `_aside` counts them, and the arena's begins again when the last one ends;
graph_pool_handle() pools are carved from the arena). MODE picks one:

"scratch_pool": a workspace allocated inside torch.cuda.use_mem_pool(a MemPool of the
    model's own) every call, the output allocated after the `with` ends, on the same
    thread: the arena's routing must be back by then (the output in the arena, no copy,
    no flag).
"shared_pool_graphs": one CUDA graph per input slot, all captured into ONE pool from
    torch.cuda.graph_pool_handle() (the documented way to let captures share memory;
    make_graphed_callables does the same): that handle is now a MemPool over the arena,
    passed by the caller to capture_begin, so the wrapper keeps it (no second pool) and
    the replays' outputs lie in the arena.
"compile_and_capture": a manually captured graph of relu(x) per slot (a pool carved from
    the arena by the wrapper), then torch.compile(mode="reduce-overhead") of relu on
    the graph's static output: two kinds of routing in one forward (the graph trees'
    warm-up routing, their own capture in their graph_pool_handle() pool, and the
    manual capture), their counts interleaved across the first calls.

Expected: pass, not flagged outputs_copied_in_child; for scratch_pool and
shared_pool_graphs timed like the eager reference (speedup >= 0.75). A failure is an
honest candidate broken by the new routing."""
import torch

MODE = "scratch_pool"


def _relu(y):
    return torch.relu(y)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.graphs = {}
        self.pool = None
        self.compiled = None
        if MODE == "scratch_pool":
            self.pool = torch.cuda.MemPool()
        elif MODE == "shared_pool_graphs":
            self.pool = torch.cuda.graph_pool_handle()
        elif MODE == "compile_and_capture":
            self.compiled = torch.compile(_relu, mode="reduce-overhead")

    def _graph(self, x, pool):
        key = (x.data_ptr(), tuple(x.shape), x.dtype)
        if key not in self.graphs:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                torch.relu(x)  # warm-up outside the capture
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, pool=pool):
                y = torch.relu(x)
            self.graphs[key] = (graph, y)
        graph, y = self.graphs[key]
        graph.replay()
        return y

    def forward(self, x):
        if MODE == "scratch_pool":
            with torch.cuda.use_mem_pool(self.pool):
                scratch = torch.empty(1 << 20, dtype=torch.float32, device=x.device)
                scratch.zero_()
            del scratch
            return torch.relu(x)
        if MODE == "shared_pool_graphs":
            return self._graph(x, self.pool)
        return self.compiled(self._graph(x, None))
