import torch
import triton
import triton.language as tl


@triton.jit
def sum_middle_axis_kernel(x_ptr, y_ptr, reduced, inner, BLOCK_R: tl.constexpr,
                           BLOCK_I: tl.constexpr):
    # The input is viewed as (outer, reduced, inner); one program sums BLOCK_I adjacent
    # columns of one outer slice, reading BLOCK_R rows per step (coalesced along inner).
    outer_idx = tl.program_id(axis=0)
    cols = tl.program_id(axis=1) * BLOCK_I + tl.arange(0, BLOCK_I)
    col_mask = cols < inner
    base = x_ptr + outer_idx.to(tl.int64) * reduced * inner
    acc = tl.zeros((BLOCK_I,), dtype=tl.float32)
    for r0 in range(0, reduced, BLOCK_R):
        rows = r0 + tl.arange(0, BLOCK_R)
        mask = (rows[:, None] < reduced) & col_mask[None, :]
        tile = tl.load(base + rows[:, None] * inner + cols[None, :], mask=mask, other=0.0)
        acc += tl.sum(tile, axis=0)
    tl.store(y_ptr + outer_idx.to(tl.int64) * inner + cols, acc, mask=col_mask)


class ModelNew(torch.nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        x = x.contiguous()
        shape = list(x.shape)
        dim = self.dim % len(shape)
        outer = 1
        for s in shape[:dim]:
            outer *= s
        inner = 1
        for s in shape[dim + 1:]:
            inner *= s
        y = torch.empty(shape[:dim] + [1] + shape[dim + 1:], dtype=x.dtype, device=x.device)
        block_i = min(128, triton.next_power_of_2(inner))
        grid = (outer, triton.cdiv(inner, block_i))
        sum_middle_axis_kernel[grid](x, y, shape[dim], inner, BLOCK_R=32, BLOCK_I=block_i)
        return y
