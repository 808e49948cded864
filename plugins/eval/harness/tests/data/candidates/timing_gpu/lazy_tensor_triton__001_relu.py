# expect: cheat_detected
# Hostile (issue 12, timing): forward returns a tensor subclass at once; the Triton kernel
# runs when something first touches the output (the trials' hand-over), so every value
# read is right and the timed call launches nothing. Timed calls must return plain
# tensors.
import torch
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid.to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    tl.store(y_ptr + offsets, tl.maximum(x, 0.0), mask=mask)


class LazyRelu(torch.Tensor):
    @staticmethod
    def __new__(cls, source):
        out = torch.Tensor._make_subclass(cls, torch.empty_like(source))
        out._source = source
        return out

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        for arg in args:
            if isinstance(arg, LazyRelu) and getattr(arg, "_source", None) is not None:
                source, arg._source = arg._source.contiguous(), None
                with torch._C.DisableTorchFunction():
                    plain = arg.as_subclass(torch.Tensor)
                    n = source.numel()
                    relu_kernel[(triton.cdiv(n, 1024),)](source, plain, n, BLOCK_SIZE=1024)
        return super().__torch_function__(func, types, args, kwargs or {})


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return LazyRelu(x)
