import ctypes

import torch
import torch.nn as nn
import kforge_cpp

# Direct convolution, stride 1, zero padding; weight layout (out, in, k) as nn.Conv1d stores it.
cpp_source = r'''
#include <cstdint>

extern "C" void conv1d_forward(const float* x, const float* weight, const float* bias, float* y,
                               int64_t batch, int64_t in_ch, int64_t out_ch, int64_t length,
                               int64_t kernel, int64_t padding, int64_t out_len) {
  #pragma omp parallel for collapse(2)
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t oc = 0; oc < out_ch; ++oc) {
      float* out = y + (b * out_ch + oc) * out_len;
      for (int64_t t = 0; t < out_len; ++t) {
        double acc = bias[oc];
        for (int64_t ic = 0; ic < in_ch; ++ic) {
          const float* in = x + (b * in_ch + ic) * length;
          const float* w = weight + (oc * in_ch + ic) * kernel;
          for (int64_t j = 0; j < kernel; ++j) {
            const int64_t pos = t - padding + j;
            if (pos >= 0 && pos < length) acc += static_cast<double>(in[pos]) * w[j];
          }
        }
        out[t] = static_cast<float>(acc);
      }
    }
  }
}
'''


class ModelNew(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)
        self.lib = kforge_cpp.load(cpp_source)

    def forward(self, x):
        x = x.contiguous()
        weight = self.conv.weight.contiguous()
        bias = self.conv.bias.contiguous()
        batch, in_ch, length = x.shape
        out_ch, _, kernel = weight.shape
        padding = kernel // 2
        out_len = length + 2 * padding - kernel + 1
        y = torch.empty((batch, out_ch, out_len), dtype=x.dtype, device=x.device)
        i64 = ctypes.c_int64
        self.lib.conv1d_forward(kforge_cpp.ptr(x), kforge_cpp.ptr(weight), kforge_cpp.ptr(bias),
                                kforge_cpp.ptr(y), i64(batch), i64(in_ch), i64(out_ch), i64(length),
                                i64(kernel), i64(padding), i64(out_len))
        return y
