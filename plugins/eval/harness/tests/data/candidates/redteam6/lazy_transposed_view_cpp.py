"""lazy_transposed_view as a cpp candidate (the class of hole does not depend on the
language): the scale is computed in C++ into a buffer kept between calls, and forward
returns its transpose, a strided plain tensor the child's hand-over materialises."""
import ctypes

import torch

import kforge_cpp

cpp_source = r'''
#include <cstdint>
extern "C" void scale2(const float* x, float* y, int64_t n) {
  #pragma omp parallel for
  for (int64_t i = 0; i < n; ++i) y[i] = 2.0f * x[i];
}
'''

_lib = kforge_cpp.load(cpp_source)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        _lib.scale2(kforge_cpp.ptr(x), kforge_cpp.ptr(y), ctypes.c_int64(x.numel()))
        return y.t()
