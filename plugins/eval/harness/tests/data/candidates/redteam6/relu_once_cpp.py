"""Honest control for confirm_reference_hogged_by_timer: the same C++ ReLU (one pass,
output buffer kept between calls), nothing else. What that kernel is worth against
tasks/redteam6/relu_twice's two passes."""
import ctypes

import torch

import kforge_cpp

cpp_source = r'''
#include <cstdint>
extern "C" void relu_forward(const float* x, float* y, int64_t n) {
  #pragma omp parallel for
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
'''

_lib = kforge_cpp.load(cpp_source)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = getattr(self, "_out", None)
        if y is None or y.shape != x.shape:
            y = self._out = torch.empty_like(x)
        _lib.relu_forward(kforge_cpp.ptr(x), kforge_cpp.ptr(y), ctypes.c_int64(x.numel()))
        return y
