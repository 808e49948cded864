import ctypes

import torch
import kforge_cpp

# The tensor is viewed as (outer, reduced, inner); each output element sums one column of
# the middle axis, accumulated in double so long reductions stay within 1e-4.
cpp_source = r'''
#include <cstdint>

extern "C" void sum_middle_axis(const float* x, float* y, int64_t outer, int64_t reduced,
                                int64_t inner) {
  #pragma omp parallel for collapse(2)
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const float* column = x + o * reduced * inner + i;
      double acc = 0.0;
      for (int64_t r = 0; r < reduced; ++r) acc += column[r * inner];
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
        shape = list(x.shape)
        dim = self.dim % len(shape)
        outer = 1
        for s in shape[:dim]:
            outer *= s
        inner = 1
        for s in shape[dim + 1:]:
            inner *= s
        out_shape = shape[:dim] + [1] + shape[dim + 1:]
        y = torch.empty(out_shape, dtype=x.dtype, device=x.device)
        self.lib.sum_middle_axis(kforge_cpp.ptr(x), kforge_cpp.ptr(y), ctypes.c_int64(outer),
                                 ctypes.c_int64(shape[dim]), ctypes.c_int64(inner))
        return y
