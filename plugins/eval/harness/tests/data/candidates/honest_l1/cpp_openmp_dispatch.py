# language: cpp
# task: linear
# Honest: OpenMP parallel for inside the call, std::thread::hardware_concurrency for the
# chunking, ctypes argtypes/restype set on the library's function, an alias of
# ctypes.c_int64, an entry point picked from a table by dtype with getattr on the library,
# nn.Linear kept for its weights.
import ctypes

import torch
import torch.nn as nn
import kforge_cpp

cpp_source = r'''
#include <algorithm>
#include <cstdint>
#include <thread>

extern "C" void linear_f32(const float* x, const float* w, const float* b, float* y,
                           int64_t rows, int64_t in_features, int64_t out_features) {
  const int64_t workers = std::max<int64_t>(1, std::thread::hardware_concurrency());
  (void)workers;
  #pragma omp parallel for collapse(2) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < out_features; ++o) {
      double acc = b[o];
      for (int64_t i = 0; i < in_features; ++i) acc += double(x[r * in_features + i]) * w[o * in_features + i];
      y[r * out_features + o] = float(acc);
    }
  }
}
'''

_ENTRY_POINTS = {torch.float32: "linear_f32"}
i64 = ctypes.c_int64


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.lib = kforge_cpp.load(cpp_source)
        entry = self.lib.linear_f32
        entry.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_int64] * 3
        entry.restype = None

    def forward(self, x):
        x = x.contiguous()
        weight = self.linear.weight.contiguous()
        bias = self.linear.bias.contiguous()
        rows, in_features = x.shape
        out_features = weight.shape[0]
        y = x.new_empty((rows, out_features))
        function = getattr(self.lib, _ENTRY_POINTS[x.dtype])
        function(kforge_cpp.ptr(x), kforge_cpp.ptr(weight), kforge_cpp.ptr(bias), kforge_cpp.ptr(y),
                 i64(rows), i64(in_features), i64(out_features))
        return y
