"""Control for rows2k_overlap_handover_cpp: the same native ReLU (one thread, GIL released)
into one output kept across calls, computed in the call, its rows returned as views:
the harness's own loop, nothing else."""
import ctypes

import torch
import torch.nn as nn

import kforge_cpp

cpp_source = r'''
#include <cstdint>
extern "C" void relu(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
'''

_lib = kforge_cpp.load(cpp_source)
_out = {}


class ModelNew(nn.Module):
    def forward(self, x):
        out = _out.get("out")
        if out is None or out.shape != x.shape:
            out = _out["out"] = torch.empty_like(x).fill_(0)
        _lib.relu(kforge_cpp.ptr(x), kforge_cpp.ptr(out), ctypes.c_int64(x.numel()))
        return out.unbind(0)
