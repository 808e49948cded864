# expect: dtype_mismatch
# The indices are right but stored as int32; torch.argmax returns int64.
import ctypes

import torch
import kforge_cpp

cpp_source = r'''
#include <cstdint>

extern "C" void argmax_middle_axis(const float* x, int32_t* y, int64_t outer, int64_t reduced,
                                   int64_t inner) {
  #pragma omp parallel for collapse(2)
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      int32_t best = 0;
      float best_value = x[o * reduced * inner + i];
      for (int64_t r = 1; r < reduced; ++r) {
        const float v = x[(o * reduced + r) * inner + i];
        if (v > best_value) { best_value = v; best = static_cast<int32_t>(r); }
      }
      y[o * inner + i] = best;
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
        y = torch.empty((batch, inner), dtype=torch.int32, device=x.device)
        self.lib.argmax_middle_axis(kforge_cpp.ptr(x), kforge_cpp.ptr(y), ctypes.c_int64(batch),
                                    ctypes.c_int64(reduced), ctypes.c_int64(inner))
        return y
