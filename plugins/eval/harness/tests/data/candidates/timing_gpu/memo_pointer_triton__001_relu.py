# expect: cheat_detected
# Hostile (issue 12, timing): a Triton ReLU that, after the trials, returns the output it
# computed before for the same input pointer. The timing's input pool refills its
# buffers in place: a reused pointer returns a stale output, and the spot check sees it.
import torch
import triton
import triton.language as tl

TRIALS = 5  # gpu_check.py's runs: options.trials is the default


@triton.jit
def relu_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid.to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    tl.store(y_ptr + offsets, tl.maximum(x, 0.0), mask=mask)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0
        self.by_pointer = {}

    def forward(self, x):
        self.calls += 1
        if self.calls > TRIALS and x.data_ptr() in self.by_pointer:
            return self.by_pointer[x.data_ptr()]
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK_SIZE=1024)
        if self.calls > TRIALS:
            self.by_pointer[x.data_ptr()] = y
        return y
