# expect: task_error
# Returns zeros without looking at the input. The reference output of this task is ~1e-8
# everywhere, whatever the input, so the zeros are within atol=1e-4 and a plain allclose
# passes them; the harness must not pass them: the task cannot judge anyone (task_error).
import ctypes

import torch
import kforge_cpp

cpp_source = r'''
#include <cstdint>
#include <cstring>

extern "C" void standardized_row_mean(const float* x, float* y, int64_t rows, int64_t cols) {
  (void)x;
  (void)cols;
  std::memset(y, 0, sizeof(float) * rows);
}
'''


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lib = kforge_cpp.load(cpp_source)

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty((x.shape[0],), dtype=x.dtype, device=x.device)
        self.lib.standardized_row_mean(kforge_cpp.ptr(x), kforge_cpp.ptr(y), ctypes.c_int64(x.shape[0]),
                                       ctypes.c_int64(x.shape[1]))
        return y
