"""Honest: a cpp ReLU whose OpenMP parallel loop runs on the runtime's own thread pool, which stays alive between calls."""
import ctypes

import torch

import kforge_cpp

cpp_source = r'''
#include <cstdint>
#include <omp.h>
extern "C" int pool_size() { return omp_get_max_threads(); }
extern "C" void relu_forward(const float* x, float* y, int64_t n) {
  #pragma omp parallel for schedule(static) num_threads(2)
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
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
