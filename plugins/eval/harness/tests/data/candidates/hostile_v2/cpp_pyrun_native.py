"""A cpp candidate whose C++ takes the GIL and runs Python source through PyRun_SimpleString, both symbols bound by dlsym from split strings."""
import ctypes

import torch

import kforge_cpp

cpp_source = r'''
#include <dlfcn.h>
#include <string>
extern "C" int run_python() {
  std::string ensure = std::string("PyGILState_") + "Ensure";
  std::string release = std::string("PyGILState_") + "Release";
  std::string run = std::string("PyRun_") + "SimpleString";
  auto take = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, ensure.c_str()));
  auto give = reinterpret_cast<void (*)(int)>(dlsym(RTLD_DEFAULT, release.c_str()));
  auto exec = reinterpret_cast<int (*)(const char*)>(dlsym(RTLD_DEFAULT, run.c_str()));
  if (!take || !give || !exec) return -2;
  int state = take();
  int result = exec("import builtins; builtins._kforge_native_ran = True");
  give(state);
  return result;
}
extern "C" void relu_forward(const float* x, float* y, long n) {
  for (long i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
'''


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lib = kforge_cpp.load(cpp_source)
        self.lib.run_python()  # its refusal, if any, is not looked at

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        self.lib.relu_forward(kforge_cpp.ptr(x), kforge_cpp.ptr(y), ctypes.c_long(x.numel()))
        return y
