import ctypes

import torch
import torch.nn as nn

import kforge_cpp

cpp_source = r'''
#include <cstdint>
// y[b, o] = bias[o] + sum_i x[b, i] * w[o, i]
extern "C" void linear_forward(const float* x, const float* w, const float* bias, float* y,
                               int64_t batch, int64_t in, int64_t out) {
  #pragma omp parallel for collapse(2)
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t o = 0; o < out; ++o) {
      float acc = bias[o];
      for (int64_t i = 0; i < in; ++i) acc += x[b * in + i] * w[o * in + i];
      y[b * out + o] = acc;
    }
}
'''


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        # Built like the reference's, so the seeded constructor gives the same weights.
        self.linear = nn.Linear(in_features, out_features)
        self.lib = kforge_cpp.load(cpp_source)

    def forward(self, x):
        x = x.contiguous()
        w = self.linear.weight.contiguous()
        batch, out = x.shape[0], w.shape[0]
        y = torch.empty(batch, out, dtype=x.dtype, device=x.device)
        self.lib.linear_forward(kforge_cpp.ptr(x), kforge_cpp.ptr(w),
                                kforge_cpp.ptr(self.linear.bias), kforge_cpp.ptr(y),
                                ctypes.c_int64(batch), ctypes.c_int64(x.shape[1]),
                                ctypes.c_int64(out))
        return y
