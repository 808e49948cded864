import torch
import triton
import triton.language as tl


@triton.jit
def sigmoid_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid.to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    # exp(-x) overflows to inf for very negative x, and 1 / inf = 0 is the right limit.
    tl.store(y_ptr + offsets, 1.0 / (1.0 + tl.exp(-x)), mask=mask)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        block = 1024
        sigmoid_kernel[(triton.cdiv(n, block),)](x, y, n, BLOCK_SIZE=block)
        return y
