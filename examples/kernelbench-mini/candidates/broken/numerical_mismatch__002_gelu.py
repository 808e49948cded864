# expect: numerical_mismatch
# Slightly wrong math: the tanh approximation of GELU instead of the exact erf form the task
# asks for. Off by up to ~5e-4, beyond atol=rtol=1e-4 on about a quarter of the elements.
import ctypes

import torch
import kforge_cpp

cpp_source = r'''
#include <cmath>
#include <cstdint>

extern "C" void gelu_forward(const float* x, float* y, int64_t n) {
  const double k = 0.7978845608028654;  // sqrt(2 / pi)
  #pragma omp parallel for
  for (int64_t i = 0; i < n; ++i) {
    const double v = x[i];
    y[i] = static_cast<float>(0.5 * v * (1.0 + std::tanh(k * (v + 0.044715 * v * v * v))));
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
        self.lib.gelu_forward(kforge_cpp.ptr(x), kforge_cpp.ptr(y), ctypes.c_int64(x.numel()))
        return y
