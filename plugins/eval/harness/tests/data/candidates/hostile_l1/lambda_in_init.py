# expect: torch-compute
# a lambda built in __init__ does the work.
import torch
import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)


def copy(src):
    """The kernel only copies: what is copied was computed by the cheat."""
    src = src.contiguous()
    out = torch.empty_like(src)
    n = src.numel()
    copy_kernel[(triton.cdiv(n, 1024),)](src, out, n, BLOCK=1024)
    return out


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.act = lambda t: torch.clamp(t, min=0)

    def forward(self, x):
        return copy(self.act(x))
