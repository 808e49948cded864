# expect: timeout
# The C++ loop never ends: its step is computed by integer division and comes out 0. The
# volatile store keeps the compiler from removing the loop. The harness must kill the child's
# process group when the wall-clock limit is hit.
import ctypes

import torch
import kforge_cpp

cpp_source = r'''
#include <cstdint>

extern "C" void relu_forward(const float* x, float* y, int64_t n) {
  const int64_t step = n / (n + 1);  // meant to be a chunk size; integer division makes it 0
  volatile float* out = y;
  for (int64_t i = 0; i < n; i += step) out[i] = x[i] > 0.f ? x[i] : 0.f;
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
