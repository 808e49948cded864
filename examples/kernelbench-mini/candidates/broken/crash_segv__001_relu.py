# expect: crash
# The child dies of SIGSEGV: the Python side forgets to allocate the output and passes a
# null pointer (ctypes.c_void_p() is NULL), and the C++ kernel writes through it.
import ctypes

import torch
import kforge_cpp

cpp_source = r'''
#include <cstdint>

extern "C" void relu_forward(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
'''


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lib = kforge_cpp.load(cpp_source)

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        self.lib.relu_forward(kforge_cpp.ptr(x), ctypes.c_void_p(), ctypes.c_int64(x.numel()))
        return y
