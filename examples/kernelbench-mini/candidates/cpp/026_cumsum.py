import ctypes

import torch
import kforge_cpp

# Running sum in double: a float running sum drifts by more than 1e-4 over long rows.
cpp_source = r'''
#include <cstdint>

extern "C" void cumsum_middle_axis(const float* x, float* y, int64_t outer, int64_t length,
                                   int64_t inner) {
  #pragma omp parallel for collapse(2)
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t base = o * length * inner + i;
      double running = 0.0;
      for (int64_t t = 0; t < length; ++t) {
        running += x[base + t * inner];
        y[base + t * inner] = static_cast<float>(running);
      }
    }
  }
}
'''


class ModelNew(torch.nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim
        self.lib = kforge_cpp.load(cpp_source)

    def forward(self, x):
        x = x.contiguous()
        shape = list(x.shape)
        dim = self.dim % len(shape)
        outer = 1
        for s in shape[:dim]:
            outer *= s
        inner = 1
        for s in shape[dim + 1:]:
            inner *= s
        y = torch.empty_like(x)
        self.lib.cumsum_middle_axis(kforge_cpp.ptr(x), kforge_cpp.ptr(y), ctypes.c_int64(outer),
                                    ctypes.c_int64(shape[dim]), ctypes.c_int64(inner))
        return y
