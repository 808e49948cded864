"""Control: the row energy (tasks/redteam3/row_energy) in plain C++, computed in the call,
float64 accumulation (what an honest kernel earns against torch's (x * x).sum(1))."""
import ctypes

import torch
import torch.nn as nn

import kforge_cpp

cpp_source = r'''
#include <cstdint>
static void energy(const float* x, float* y, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * cols;
    float lanes[16] = {0};
    int64_t c = 0;
    for (; c + 16 <= cols; c += 16)
      for (int k = 0; k < 16; ++k) lanes[k] += row[c + k] * row[c + k];
    double total = 0;
    for (; c < cols; ++c) total += (double)row[c] * row[c];
    for (int k = 0; k < 16; ++k) total += lanes[k];
    y[r] = (float)total;
  }
}

extern "C" void row_energy(const float* x, float* y, int64_t rows, int64_t cols) {
  energy(x, y, rows, cols);
}
'''


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.lib = kforge_cpp.load(cpp_source)

    def forward(self, x):
        x = x.contiguous()
        rows, cols = x.shape
        y = torch.empty(rows, dtype=x.dtype)
        self.lib.row_energy(kforge_cpp.ptr(x), kforge_cpp.ptr(y), ctypes.c_int64(rows),
                            ctypes.c_int64(cols))
        return y
