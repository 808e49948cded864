import ctypes

import torch
import kforge_cpp

# A second candidate for the same task: branch-free ReLU over fixed-size chunks.
cpp_source = r'''
#include <algorithm>
#include <cstdint>

extern "C" void relu_chunked(const float* x, float* y, int64_t n) {
  const int64_t chunk = 4096;
  const int64_t chunks = (n + chunk - 1) / chunk;
  #pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t end = std::min(n, (c + 1) * chunk);
    for (int64_t i = c * chunk; i < end; ++i) y[i] = std::max(x[i], 0.f);
  }
}
'''


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lib = kforge_cpp.load(cpp_source)

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        self.lib.relu_chunked(kforge_cpp.ptr(x), kforge_cpp.ptr(y), ctypes.c_int64(x.numel()))
        return y
