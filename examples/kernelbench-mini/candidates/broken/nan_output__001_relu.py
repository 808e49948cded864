# expect: numerical_mismatch
# Output holds NaN: a "branch-free" ReLU multiplies and divides by the mask, and for every
# negative input 0 / 0 gives NaN. The verdict's max_abs_diff should say nan (or inf).
import ctypes

import torch
import kforge_cpp

cpp_source = r'''
#include <cstdint>

extern "C" void relu_forward(const float* x, float* y, int64_t n) {
  #pragma omp parallel for
  for (int64_t i = 0; i < n; ++i) {
    const float mask = x[i] > 0.f ? 1.f : 0.f;
    y[i] = (x[i] * mask) / mask;
  }
}
'''


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lib = kforge_cpp.load(cpp_source)

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        self.lib.relu_forward(kforge_cpp.ptr(x), kforge_cpp.ptr(y), ctypes.c_int64(x.numel()))
        return y
