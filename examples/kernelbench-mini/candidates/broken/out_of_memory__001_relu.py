# expect: out_of_memory
# forward asks for a 256 GiB scratch buffer (numpy, zero-filled so that every page would be
# touched). Under the harness's address-space limit, or on any machine with less memory,
# numpy raises MemoryError before the C++ kernel runs.
import ctypes

import numpy as np
import torch
import kforge_cpp

cpp_source = r'''
#include <cstdint>

extern "C" void relu_forward(const float* x, float* y, float* scratch, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    scratch[i] = x[i];
    y[i] = scratch[i] > 0.f ? scratch[i] : 0.f;
  }
}
'''

SCRATCH_BYTES = 256 << 30


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lib = kforge_cpp.load(cpp_source)

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        scratch = np.zeros(SCRATCH_BYTES // 4, dtype=np.float32)
        self.lib.relu_forward(kforge_cpp.ptr(x), kforge_cpp.ptr(y), ctypes.c_void_p(scratch.ctypes.data),
                              ctypes.c_int64(x.numel()))
        return y
