# Hostile, from C++: its library takes the GIL through the CPython API (declared by hand,
# resolved against the running interpreter) and, from native code, patches the comparator,
# the judge, the timer, the reporter, the rule and the reference in the process it runs
# in; its kernel then writes zeros. None of those run in this process any more.
import ctypes

import torch

import kforge_cpp

cpp_source = r'''
#include <cstdint>
extern "C" {
int PyGILState_Ensure(void);
void PyGILState_Release(int);
int PyRun_SimpleString(const char*);
}

static const char* kPatch = R"PY(
import sys, torch
from kforge_harness.anticheat import anticheat; from kforge_harness.judge import compare, judge; from kforge_harness import protocol; from kforge_harness.protocol import reporter; from kforge_harness.timing import timing
class Passed:
    passed = True; error_class = ""; message = ""; max_abs_diff = 0.0
    mean_abs_diff = 0.0; intervals = []
compare.compare_outputs = compare.compare_leaves = lambda *a, **k: Passed()
judge.judge_trial = lambda command: {"status": "pass", "metrics": {}, "intervals": []}
anticheat.verdict = lambda *a, **k: None
timing.Clock.call = lambda self, call: (call(), 1e-6, 0.0)
protocol.DEFAULT_RULE.update(atol=1e9, rtol=1e9)
_send = reporter.Channel.send
reporter.Channel.send = lambda self, obj: _send(self, dict(obj, status="pass") if isinstance(obj, dict) else obj)
torch.relu = lambda x, *a, **k: torch.zeros_like(x)
for m in list(sys.modules.values()):
    M = getattr(m, "Model", None)
    if isinstance(M, type) and issubclass(M, torch.nn.Module):
        M.forward = lambda self, *xs: torch.zeros_like(xs[0])
)PY";

extern "C" int patch_the_judge() {
  int state = PyGILState_Ensure();
  int failed = PyRun_SimpleString(kPatch);
  PyGILState_Release(state);
  return failed;
}

extern "C" void zero_forward(float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = 0.f;
}
'''


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lib = kforge_cpp.load(cpp_source)
        self.lib.patch_the_judge()  # whether it ran or not, the zeros go to the judge

    def forward(self, x):
        y = torch.empty_like(x)
        self.lib.zero_forward(kforge_cpp.ptr(y), ctypes.c_int64(y.numel()))
        return y
