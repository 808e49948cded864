import ctypes

import torch
import torch.nn as nn
import kforge_cpp

# Two passes per row in double (mean, then biased variance), eps as nn.LayerNorm's default.
cpp_source = r'''
#include <cmath>
#include <cstdint>

extern "C" void layer_norm_rows(const float* x, const float* weight, const float* bias, float* y,
                                int64_t rows, int64_t cols, float eps) {
  #pragma omp parallel for
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = x + r * cols;
    float* out = y + r * cols;
    double sum = 0.0;
    for (int64_t c = 0; c < cols; ++c) sum += in[c];
    const double mean = sum / cols;
    double sq = 0.0;
    for (int64_t c = 0; c < cols; ++c) { const double d = in[c] - mean; sq += d * d; }
    const double inv_std = 1.0 / std::sqrt(sq / cols + eps);
    for (int64_t c = 0; c < cols; ++c)
      out[c] = static_cast<float>((in[c] - mean) * inv_std * weight[c] + bias[c]);
  }
}
'''


class ModelNew(nn.Module):
    def __init__(self, hidden_size: int):
        super().__init__()
        self.norm = nn.LayerNorm(hidden_size)
        self.lib = kforge_cpp.load(cpp_source)

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        cols = x.shape[-1]
        weight = self.norm.weight.contiguous()
        bias = self.norm.bias.contiguous()
        self.lib.layer_norm_rows(kforge_cpp.ptr(x), kforge_cpp.ptr(weight), kforge_cpp.ptr(bias),
                                 kforge_cpp.ptr(y), ctypes.c_int64(x.numel() // cols),
                                 ctypes.c_int64(cols), ctypes.c_float(self.norm.eps))
        return y
