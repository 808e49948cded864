# expect: device_error
# Illegal memory access on the GPU. The kernel takes a "start index" into x, and forward
# passes the buffer's absolute address in elements instead, then subtracts it: every lane,
# masked-in ones included, reads near address 0, which no allocation maps. The fault
# poisons this process's CUDA context; the next job (a fresh child) must be unaffected.
import torch
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, start_index, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid.to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + (offsets - start_index), mask=mask, other=0.0)
    tl.store(y_ptr + offsets, tl.maximum(x, 0.0), mask=mask)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        block = 1024
        start_index = x.data_ptr() // x.element_size()
        relu_kernel[(triton.cdiv(n, block),)](x, y, start_index, n, BLOCK_SIZE=block)
        return y
