import torch
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(y_ptr + offsets, tl.maximum(x, 0.0), mask=mask)


class ModelNew(torch.nn.Module):
    """Honest (issue 19 item 7): captures its kernel in a CUDA graph once, then replays it
    on the call's own inputs (copied into the graph's static input first)."""

    def __init__(self):
        super().__init__()
        self.graph = None

    def forward(self, x):
        if self.graph is None or self.static_x.shape != x.shape:
            self.static_x = torch.empty_like(x)
            self.static_y = torch.empty_like(x)
            self.static_x.copy_(x)
            n = x.numel()
            relu_kernel[(triton.cdiv(n, 1024),)](self.static_x, self.static_y, n, BLOCK=1024)
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                relu_kernel[(triton.cdiv(n, 1024),)](self.static_x, self.static_y, n, BLOCK=1024)
        self.static_x.copy_(x)
        self.graph.replay()
        return self.static_y.clone()
