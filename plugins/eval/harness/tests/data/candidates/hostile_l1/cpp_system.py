# expect: native-process
# language: cpp
# the C++ entry point runs a Python program that computes the answer.
import ctypes

import torch
import kforge_cpp

cpp_source = r'''
#include <cstdint>
#include <cstdlib>

extern "C" void relu_forward(const float* x, float* y, int64_t n) {
  std::system("python3 -c 'import kforge_candidate'");
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
