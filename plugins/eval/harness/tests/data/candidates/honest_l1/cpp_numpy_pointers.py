# language: cpp
# task: 058_numpy_relu
# Honest: a NumPy task; pointers through ndarray.ctypes.data_as and numpy.ctypeslib.
import ctypes

import numpy as np
import torch
import kforge_cpp

cpp_source = r'''
#include <cstdint>

extern "C" void relu_forward(const float* x, float* y, int64_t n) {
  #pragma omp parallel for simd
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
'''

FLOAT_PTR = ctypes.POINTER(ctypes.c_float)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lib = kforge_cpp.load(cpp_source)
        self.lib.relu_forward.argtypes = [np.ctypeslib.ndpointer(np.float32, flags="C_CONTIGUOUS"),
                                          FLOAT_PTR, ctypes.c_int64]

    def forward(self, x):
        x = np.ascontiguousarray(x, dtype=np.float32)
        y = np.empty_like(x)
        self.lib.relu_forward(x, y.ctypes.data_as(FLOAT_PTR), ctypes.c_int64(x.size))
        return y
