# expect: crash
# The child dies of SIGABRT: the C++ kernel dispatches on a layout code, the Python side
# passes one the kernel does not handle, and the default branch calls std::abort() (as an
# LLVM or library assertion would).
import ctypes

import torch
import kforge_cpp

cpp_source = r'''
#include <cstdint>
#include <cstdio>
#include <cstdlib>

extern "C" void relu_forward(const float* x, float* y, int64_t n, int layout) {
  switch (layout) {
    case 0:
      for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
      return;
    default:
      std::fprintf(stderr, "relu_forward: unsupported layout %d\n", layout);
      std::abort();
  }
}
'''

CONTIGUOUS_LAYOUT = 1


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lib = kforge_cpp.load(cpp_source)

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        self.lib.relu_forward(kforge_cpp.ptr(x), kforge_cpp.ptr(y), ctypes.c_int64(x.numel()),
                              ctypes.c_int(CONTIGUOUS_LAYOUT))
        return y
