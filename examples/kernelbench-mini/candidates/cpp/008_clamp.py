import ctypes

import torch
import kforge_cpp

cpp_source = r'''
#include <cstdint>

extern "C" void clamp_forward(const float* x, float* y, int64_t n, float lo, float hi) {
  #pragma omp parallel for simd
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i] < lo ? lo : x[i];
    y[i] = v > hi ? hi : v;
  }
}
'''


class ModelNew(torch.nn.Module):
    def __init__(self, min_value: float, max_value: float):
        super().__init__()
        self.min_value = min_value
        self.max_value = max_value
        self.lib = kforge_cpp.load(cpp_source)

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        self.lib.clamp_forward(kforge_cpp.ptr(x), kforge_cpp.ptr(y), ctypes.c_int64(x.numel()),
                               ctypes.c_float(self.min_value), ctypes.c_float(self.max_value))
        return y
