# expect: native-python-api
# language: cpp
# the C++ entry point runs Python through the embedded interpreter's C API.
import ctypes

import torch
import kforge_cpp

cpp_source = r'''
#include <Python.h>
#include <cstdint>

extern "C" void relu_forward(const float* x, float* y, int64_t n) {
  PyGILState_STATE state = PyGILState_Ensure();
  PyRun_SimpleString("import kforge_candidate as c, torch; c.OUT = torch.relu(c.IN)");
  PyGILState_Release(state);
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
