"""An L1-clean `cpp` candidate (an honest C++ ReLU through kforge_cpp) that forges its
timed reports as forge_report_median does. L1 rejects `import kforge_harness` and
`sys.modules` for kernel languages, but not `os.sys.modules` (os is allowed and its `sys`
attribute is the sys module): the harness's protocol module is reached through it, and its
`encode` (looked up by the child's Channel.send at every call) rebound."""
import ctypes
import os
import time

import torch
import kforge_cpp

cpp_source = r'''
#include <cstdint>
extern "C" void relu_forward(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
'''

SCALE = 0.3
WARMUP = 3
ROLES = "FHSFHSFHSFHSFHSFHFFF"  # 9 fake (F), 6 huge (H), 5 sleepy (S) of 20 timed calls
_protocol = os.sys.modules["kforge_harness.protocol"]
_real_encode = _protocol.encode


def _shape(message):
    if not isinstance(message, dict) or "called" not in message or "ms" not in message:
        return message
    t = message["called"] - WARMUP
    if t < 0:
        return message
    message = dict(message)
    role = ROLES[t] if t < len(ROLES) else "F"
    if role == "H":
        message["ms"] = 500.0
    elif role == "S":
        time.sleep(0.4)
        message["ms"] = message["ms"] * SCALE
    else:
        message["ms"] = message["ms"] * SCALE
    message["tail_ms"] = 0.0
    return message


def _encode(obj, *args, **kwargs):
    return _real_encode(_shape(obj), *args, **kwargs)


_protocol.encode = _encode


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lib = kforge_cpp.load(cpp_source)

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        self.lib.relu_forward(kforge_cpp.ptr(x), kforge_cpp.ptr(y), ctypes.c_int64(x.numel()))
        return y
