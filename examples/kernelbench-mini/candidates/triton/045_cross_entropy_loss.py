import torch
import triton
import triton.language as tl


@triton.jit
def row_loss_kernel(logits_ptr, targets_ptr, losses_ptr, n_classes, BLOCK: tl.constexpr):
    # loss = logsumexp(row) - row[target], one program per row.
    row = tl.program_id(axis=0).to(tl.int64)
    x_row = logits_ptr + row * n_classes
    running_max = tl.full((BLOCK,), float("-inf"), dtype=tl.float32)
    for start in range(0, n_classes, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < n_classes, other=float("-inf"))
        running_max = tl.maximum(running_max, x)
    row_max = tl.max(running_max, axis=0)
    running_sum = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n_classes, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < n_classes, other=float("-inf"))
        running_sum += tl.exp(x - row_max)
    target = tl.load(targets_ptr + row)
    target_logit = tl.load(x_row + target)
    tl.store(losses_ptr + row, row_max + tl.log(tl.sum(running_sum, axis=0)) - target_logit)


@triton.jit
def mean_kernel(values_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # A single program: a fixed summation order, so the result is deterministic.
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(values_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0) / n)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, logits, targets):
        logits = logits.contiguous()
        targets = targets.contiguous()
        rows, classes = logits.shape
        losses = torch.empty((rows,), dtype=torch.float32, device=logits.device)
        out = torch.empty((), dtype=logits.dtype, device=logits.device)
        block = min(4096, triton.next_power_of_2(classes))
        row_loss_kernel[(rows,)](logits, targets, losses, classes, BLOCK=block, num_warps=8)
        mean_kernel[(1,)](losses, out, rows, BLOCK=1024)
        return out
