# expect: init_error
# The constructor's signature matches Model's (so the static check accepts it), but its body
# assumes the init inputs arrive as one list: ModelNew(*get_init_inputs()) raises TypeError
# ('float' object is not subscriptable).
import ctypes

import torch
import kforge_cpp

cpp_source = r'''
#include <cstdint>

extern "C" void leaky_relu_forward(const float* x, float* y, int64_t n, float negative_slope) {
  #pragma omp parallel for
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] >= 0.f ? x[i] : x[i] * negative_slope;
}
'''


class ModelNew(torch.nn.Module):
    def __init__(self, negative_slope: float):
        super().__init__()
        self.negative_slope = float(negative_slope[0])
        self.lib = kforge_cpp.load(cpp_source)

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        self.lib.leaky_relu_forward(kforge_cpp.ptr(x), kforge_cpp.ptr(y), ctypes.c_int64(x.numel()),
                                    ctypes.c_float(self.negative_slope))
        return y
