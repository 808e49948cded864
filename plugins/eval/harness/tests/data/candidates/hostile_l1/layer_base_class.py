# expect: base-class
# ModelNew inherits a torch layer and calls its forward through super().
import torch
import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)


class ModelNew(torch.nn.ReLU):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        src = super().forward(x)
        out = torch.empty_like(src)
        copy_kernel[(triton.cdiv(out.numel(), 1024),)](src, out, out.numel(), BLOCK=1024)
        return out
