# expect: shape_mismatch
# The sums are right but the reduced dimension is dropped: (B, D2) instead of the
# reference's keepdim shape (B, 1, D2).
import ctypes

import torch
import kforge_cpp

cpp_source = r'''
#include <cstdint>

extern "C" void sum_middle_axis(const float* x, float* y, int64_t outer, int64_t reduced,
                                int64_t inner) {
  #pragma omp parallel for collapse(2)
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      double acc = 0.0;
      for (int64_t r = 0; r < reduced; ++r) acc += x[(o * reduced + r) * inner + i];
      y[o * inner + i] = static_cast<float>(acc);
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
        batch, reduced, inner = x.shape
        y = torch.empty((batch, inner), dtype=x.dtype, device=x.device)
        self.lib.sum_middle_axis(kforge_cpp.ptr(x), kforge_cpp.ptr(y), ctypes.c_int64(batch),
                                 ctypes.c_int64(reduced), ctypes.c_int64(inner))
        return y
