"""downgrade_copy's control: the same CLONE_PARENT sibling (the read hand-over forced
off), and an honest C++ ReLU in forward (forged/cpp_honest_relu's), its hand-over untouched. It should pass."""
import ctypes

import torch
import kforge_cpp

cpp_source = r'''
#include <cstdint>
#include <csignal>
#include <sched.h>
#include <unistd.h>
#include <sys/syscall.h>

extern "C" long sibling() {
  long pid = syscall(SYS_clone, (unsigned long)(CLONE_PARENT | SIGCHLD), 0, 0, 0, 0);
  if (pid == 0) { for (;;) pause(); }
  return pid;
}
extern "C" void relu_forward(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
'''

_lib = kforge_cpp.load(cpp_source)
_lib.sibling.restype = ctypes.c_long
SIBLING = _lib.sibling()


class ModelNew(torch.nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        _lib.relu_forward(kforge_cpp.ptr(x), kforge_cpp.ptr(y), ctypes.c_int64(x.numel()))
        return y
