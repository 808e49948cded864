import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    # One program per row, three sweeps (max, sum of exponentials, write) so that rows of any
    # length work with a fixed block size.
    row = tl.program_id(axis=0).to(tl.int64)
    x_row = x_ptr + row * n_cols
    y_row = y_ptr + row * n_cols
    running_max = tl.full((BLOCK,), float("-inf"), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf"))
        running_max = tl.maximum(running_max, x)
    row_max = tl.max(running_max, axis=0)
    running_sum = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf"))
        running_sum += tl.exp(x - row_max)
    inv_total = 1.0 / tl.sum(running_sum, axis=0)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=float("-inf"))
        tl.store(y_row + cols, tl.exp(x - row_max) * inv_total, mask=mask)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        rows, cols = x.shape
        block = min(4096, triton.next_power_of_2(cols))
        softmax_kernel[(rows,)](x, y, cols, BLOCK=block, num_warps=8)
        return y
