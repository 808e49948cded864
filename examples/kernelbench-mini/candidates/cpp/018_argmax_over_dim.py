import ctypes

import torch
import kforge_cpp

# Strict '>' keeps the first index among equal maxima, as torch.argmax does.
cpp_source = r'''
#include <cstdint>

extern "C" void argmax_middle_axis(const float* x, int64_t* y, int64_t outer, int64_t reduced,
                                   int64_t inner) {
  #pragma omp parallel for collapse(2)
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const float* column = x + o * reduced * inner + i;
      int64_t best = 0;
      float best_value = column[0];
      for (int64_t r = 1; r < reduced; ++r) {
        const float v = column[r * inner];
        if (v > best_value) { best_value = v; best = r; }
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
        shape = list(x.shape)
        dim = self.dim % len(shape)
        outer = 1
        for s in shape[:dim]:
            outer *= s
        inner = 1
        for s in shape[dim + 1:]:
            inner *= s
        y = torch.empty(shape[:dim] + shape[dim + 1:], dtype=torch.int64, device=x.device)
        self.lib.argmax_middle_axis(kforge_cpp.ptr(x), kforge_cpp.ptr(y), ctypes.c_int64(outer),
                                    ctypes.c_int64(shape[dim]), ctypes.c_int64(inner))
        return y
