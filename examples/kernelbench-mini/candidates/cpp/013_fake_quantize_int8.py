import ctypes

import torch
import kforge_cpp

# nearbyintf rounds half to even in the default rounding mode, like torch.round.
cpp_source = r'''
#include <cmath>
#include <cstdint>

extern "C" void fake_quantize_int8(const float* x, float* y, int64_t n, float scale) {
  #pragma omp parallel for
  for (int64_t i = 0; i < n; ++i) {
    float q = std::nearbyintf(x[i] / scale);
    q = q < -128.f ? -128.f : (q > 127.f ? 127.f : q);
    y[i] = q * scale;
  }
}
'''


class ModelNew(torch.nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale
        self.lib = kforge_cpp.load(cpp_source)

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        self.lib.fake_quantize_int8(kforge_cpp.ptr(x), kforge_cpp.ptr(y), ctypes.c_int64(x.numel()),
                                    ctypes.c_float(self.scale))
        return y
