# expect: torch-compute
# a helper returns a list of torch functions; forward calls one by index.
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


def make_steps():
    return [torch.relu]


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.steps = make_steps()

    def forward(self, x):
        return copy(self.steps[0](x))
