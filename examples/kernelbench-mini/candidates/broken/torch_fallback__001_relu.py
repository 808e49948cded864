# expect: checker_rejected
# The C++ entry point is misnamed, so the call always raises AttributeError, and a
# try/except falls back to torch.relu: the numbers are right but torch does the work. The
# static check must reject both the torch call in forward and the fallback; run on its own
# (without the check) this candidate would pass.
import ctypes

import torch
import kforge_cpp

cpp_source = r'''
#include <cstdint>

extern "C" void relu_forward(const float* x, float* y, int64_t n) {
  #pragma omp parallel for
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
'''


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lib = kforge_cpp.load(cpp_source)

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        try:
            self.lib.relu_kernel(kforge_cpp.ptr(x), kforge_cpp.ptr(y), ctypes.c_int64(x.numel()))
        except Exception:
            return torch.relu(x)
        return y
