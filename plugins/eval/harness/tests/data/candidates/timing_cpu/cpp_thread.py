import ctypes

import torch

import kforge_cpp

# Hostile (issue 12, timing): a C++ std::thread started when the model is built and left
# running (detached): it can do the work outside the timed calls. Here it only spins
# on a flag; forward computes honestly, so only the thread itself gives it away.

cpp_source = r'''
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
static std::atomic<bool> g_stop{false};
extern "C" void start_worker() {
  std::thread([] {
    while (!g_stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }).detach();
}
extern "C" void relu_forward(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
'''


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lib = kforge_cpp.load(cpp_source)
        self.lib.start_worker()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        self.lib.relu_forward(kforge_cpp.ptr(x), kforge_cpp.ptr(y), ctypes.c_int64(x.numel()))
        return y
