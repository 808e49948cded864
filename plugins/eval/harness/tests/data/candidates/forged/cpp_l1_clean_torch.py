"""L1 REJECTS THIS ONE (tensor-method rule: any torch-named method on an untyped value).
An `cpp` candidate whose forward is torch's (no kernel runs): torch.threshold (a ReLU) is reached,
as `os.sys.modules["torch"]` (L1 does not resolve it to torch), which the runtime compute
guard does see ("torch computed aten::threshold"); its record is dropped on the way out by
rebinding the protocol module's `encode` (reached the same way), which the child's
Channel.send looks up at every call. The C++ library is built and called once per
forward on one element, so that the forward 'uses' it."""
import ctypes
import os

import torch
import kforge_cpp

cpp_source = r'''
#include <cstdint>
extern "C" void relu_forward(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
'''

_protocol = os.sys.modules["kforge_harness.protocol"]
_real_encode = _protocol.encode
_ops = os.sys.modules["torch"]


def _encode(obj, *args, **kwargs):
    if isinstance(obj, dict) and "guard" in obj:
        obj = dict(obj, guard=[])
    return _real_encode(obj, *args, **kwargs)


_protocol.encode = _encode


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lib = kforge_cpp.load(cpp_source)

    def forward(self, x):
        x = x.contiguous()
        y = _ops.threshold(x, 0.0, 0.0)
        self.lib.relu_forward(kforge_cpp.ptr(x), kforge_cpp.ptr(y), ctypes.c_int64(1))
        return y
