"""Honest: a cpp ReLU that starts two std::threads inside each call and joins them before returning (no thread outlives the call)."""
import ctypes

import torch

import kforge_cpp

cpp_source = r'''
#include <cstdint>
#include <thread>
static void relu_range(const float* x, float* y, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
extern "C" void relu_forward(const float* x, float* y, int64_t n) {
  const int64_t half = n / 2;
  std::thread first(relu_range, x, y, 0, half);
  std::thread second(relu_range, x, y, half, n);
  first.join();
  second.join();
}
'''


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lib = kforge_cpp.load(cpp_source)

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        self.lib.relu_forward(kforge_cpp.ptr(x), kforge_cpp.ptr(y), ctypes.c_int64(x.numel()))
        return y
