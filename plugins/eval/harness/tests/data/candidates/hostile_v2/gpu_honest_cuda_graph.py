"""Honest: a Triton ReLU captured into a CUDA graph once per input buffer and replayed on the call's own inputs (the lent input slots keep their addresses, their contents change)."""
import torch
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, tl.maximum(tl.load(x_ptr + offsets, mask=mask), 0.0), mask=mask)


def _launch(x, y):
    relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.graphs = {}

    def forward(self, x):
        x = x.contiguous()
        key = (x.data_ptr(), tuple(x.shape), x.dtype)
        if key not in self.graphs:
            y = torch.empty_like(x)
            _launch(x, y)  # compiles the kernel outside the capture
            torch.cuda.synchronize()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                _launch(x, y)
            self.graphs[key] = (graph, y)
        graph, y = self.graphs[key]
        graph.replay()
        return y
