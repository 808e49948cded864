# expect: compile_error
# g++ rejects the C++: std::max(const float&, int) has no matching overload (the literal 0
# is an int), a mistake generated kernels often make. The message must keep file:line.
import ctypes

import torch
import kforge_cpp

cpp_source = r'''
#include <algorithm>
#include <cstdint>

extern "C" void relu_forward(const float* x, float* y, int64_t n) {
  #pragma omp parallel for
  for (int64_t i = 0; i < n; ++i) y[i] = std::max(x[i], 0);
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
