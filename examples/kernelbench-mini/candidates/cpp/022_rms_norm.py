import ctypes

import torch
import torch.nn as nn
import kforge_cpp

cpp_source = r'''
#include <cmath>
#include <cstdint>

extern "C" void rms_norm_rows(const float* x, const float* weight, float* y, int64_t rows,
                              int64_t cols, float eps) {
  #pragma omp parallel for
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = x + r * cols;
    float* out = y + r * cols;
    double sq = 0.0;
    for (int64_t c = 0; c < cols; ++c) sq += static_cast<double>(in[c]) * in[c];
    const double inv_rms = 1.0 / std::sqrt(sq / cols + eps);
    for (int64_t c = 0; c < cols; ++c) out[c] = static_cast<float>(in[c] * inv_rms * weight[c]);
  }
}
'''


class ModelNew(nn.Module):
    def __init__(self, hidden_size: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.randn(hidden_size))
        self.lib = kforge_cpp.load(cpp_source)

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        cols = x.shape[-1]
        weight = self.weight.contiguous()
        self.lib.rms_norm_rows(kforge_cpp.ptr(x), kforge_cpp.ptr(weight), kforge_cpp.ptr(y),
                               ctypes.c_int64(x.numel() // cols), ctypes.c_int64(cols),
                               ctypes.c_float(self.eps))
        return y
