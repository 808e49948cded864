"""A cpp candidate that replaces ModelNew.forward with a torch one after its last trial, so the timed calls run torch."""
import ctypes

import torch

import kforge_cpp

TRIALS = 5  # options.trials of the tests' requests
cpp_source = r'''
#include <cstdint>
extern "C" void relu_forward(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
'''


def _torch_forward(self, x):
    return torch.relu(x)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lib = kforge_cpp.load(cpp_source)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        if self.calls == TRIALS:
            setattr(type(self), "forward", _torch_forward)
        x = x.contiguous()
        y = torch.empty_like(x)
        self.lib.relu_forward(kforge_cpp.ptr(x), kforge_cpp.ptr(y), ctypes.c_int64(x.numel()))
        return y
