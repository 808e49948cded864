# expect: rearrange-copy
# task: 036_matmul_transposed_b
# The transpose is materialised by torch (.T then .clone()); the copy kernel moves nothing
# new. (The product itself is left to a copy here to keep the example small.)
import torch
import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        b_t = b.T
        src = b_t.clone()
        out = torch.empty_like(src)
        copy_kernel[(triton.cdiv(out.numel(), 1024),)](src, out, out.numel(), BLOCK=1024)
        return out
