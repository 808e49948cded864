# expect: dynamic-code
# builtins.__import__ reaches torch.nn.functional without an import statement.
import torch
import triton
import triton.language as tl
import builtins


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

    def forward(self, x):
        return copy(builtins.__import__("torch.nn.functional", fromlist=["threshold"]).threshold(x, 0.0, 0.0))
