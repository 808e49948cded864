"""Keeps the cgroup freezer waiting: a thread that spends its life inside one long system
call after another, so that whenever the server freezes the candidate's cgroup between
timed calls, one of its tasks is still in the kernel and the freeze lands only when that
call returns.

mmap(MAP_POPULATE) of 384 MB (MAP_FIXED over the last round's) faults in and zeroes every page inside the
kernel, and stops early only for a fatal signal: the freezer's wake-up does not cut it
short. The thread starts one such call as each forward returns (it sleeps on a futex
otherwise, so it takes little from the candidate's own timed calls). On the 2-core VM
one takes about 0.3 s, under the server's 1 s patience
(freezer.FREEZE_PATIENCE_S), so the freeze always lands in time and nothing is flagged;
meanwhile Group.freeze() spins in the server's only thread, and every other job's
messages (its timed calls' ends, its host's answers) wait for it.

The forward itself is honest (ReLU in C++): this candidate gains nothing for itself; what
it takes is the server's attention, from the jobs beside it."""
import ctypes

import torch
import torch.nn as nn

import kforge_cpp

cpp_source = r'''
#include <atomic>
#include <cstdint>
#include <linux/futex.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static const size_t SIZE = size_t(384) << 20;
static std::atomic<int32_t> bell{0};
static std::atomic<int32_t> entered{0};

// One long call per forward, started as the forward returns (the forward waits until the
// thread is on its way into the kernel): in the kernel when the server freezes the
// group, asleep on the futex from the next thaw until the next forward returns.
static void* in_the_kernel(void*) {
  int32_t seen = 0;
  void* region = nullptr;
  for (;;) {
    while (bell.load() == seen) syscall(SYS_futex, &bell, FUTEX_WAIT, seen, nullptr, nullptr, 0);
    seen = bell.load();
    entered.store(seen);
    // One system call: the last round's pages freed (MAP_FIXED over them), new ones
    // faulted in and zeroed.
    void* at = mmap(region, SIZE, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE | (region ? MAP_FIXED : 0), -1, 0);
    if (at != MAP_FAILED) region = at;
  }
  return nullptr;
}

extern "C" void ring() {
  bell.fetch_add(1);
  int32_t rung = bell.load();
  syscall(SYS_futex, &bell, FUTEX_WAKE, 1, nullptr, nullptr, 0);
  while (entered.load() != rung) {}  // a few microseconds: the thread is on its way in
}

extern "C" int start() {
  pthread_t thread;
  return pthread_create(&thread, nullptr, in_the_kernel, nullptr);
}

extern "C" void relu(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0 ? x[i] : 0.0f;
}
'''


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.lib = kforge_cpp.load(cpp_source)
        self.started = False

    def forward(self, x):
        if not self.started:
            self.started = True
            print(f"helper: started {self.lib.start()}", flush=True)
        x = x.contiguous()
        y = torch.empty_like(x)
        self.lib.relu(kforge_cpp.ptr(x), kforge_cpp.ptr(y), ctypes.c_int64(x.numel()))
        self.lib.ring()
        return y
