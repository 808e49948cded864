"""A cpp candidate whose C++ forks helper processes that SIGCONT each other and the worker in a loop, so that the server's SIGSTOP walk cannot freeze the tree between timed calls and a thread can precompute the next output; it raises FROZEN when the freeze held anyway."""
import ctypes
import threading
import time

import torch

import kforge_cpp

TRIALS = 5  # options.trials of the tests' requests
HELPERS = 4
cpp_source = r'''
#include <csignal>
#include <cstdint>
#include <ctime>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

struct Shared { pid_t pids[16]; int count; };
static Shared* shared = nullptr;

extern "C" int start_helpers(int count) {
  shared = static_cast<Shared*>(mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE,
                                     MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  if (shared == MAP_FAILED || count > 15) return -1;
  shared->count = 0;
  shared->pids[0] = getpid();  // the worker: kept running too
  for (int i = 1; i <= count; ++i) {
    pid_t pid = fork();
    if (pid == 0) {
      prctl(PR_SET_NAME, "kfhelper");
      for (;;) {
        int known = __atomic_load_n(&shared->count, __ATOMIC_ACQUIRE);
        for (int j = 0; j <= known; ++j) kill(shared->pids[j], SIGCONT);
      }
    }
    if (pid < 0) return -1;
    shared->pids[i] = pid;
  }
  __atomic_store_n(&shared->count, count, __ATOMIC_RELEASE);
  return count;
}

extern "C" void relu_forward(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
'''


def _relu(lib, x):
    x = x.contiguous()
    y = torch.empty_like(x)
    lib.relu_forward(kforge_cpp.ptr(x), kforge_cpp.ptr(y), ctypes.c_int64(x.numel()))
    return y


def _sample(x):
    return x.reshape(-1)[:64].numpy().tobytes()


class _Watch:
    """Stamps the time every 20 us; a long silence between two calls means this process
    was stopped. While it runs, it computes ReLU of whichever input slot changed."""

    def __init__(self, lib):
        self.lib = lib
        self.stamps = []
        self.slots = {}
        self.ready = {}
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        while True:
            time.sleep(20e-6)
            self.stamps.append(time.monotonic_ns())
            del self.stamps[:-4096]
            for pointer, x in list(self.slots.items()):
                sample = _sample(x)
                done = self.ready.get(pointer)
                if done is None or done[0] != sample:
                    self.ready[pointer] = (sample, _relu(self.lib, x))

    def longest_silence(self, since, until):
        stamps = [since] + [s for s in list(self.stamps) if since < s < until] + [until]
        return max(b - a for a, b in zip(stamps, stamps[1:]))


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lib = kforge_cpp.load(cpp_source)
        self.watch = _Watch(self.lib)
        self.calls = 0
        self.left = None
        self.frozen = 0

    def forward(self, x):
        self.calls += 1
        entered = time.monotonic_ns()
        if self.calls == TRIALS:
            if self.lib.start_helpers(ctypes.c_int(HELPERS)) != HELPERS:
                raise RuntimeError("could not fork the helpers")
        elif self.calls > TRIALS + 1 and self.left is not None:
            silence = self.watch.longest_silence(self.left, entered)
            if silence > 0.8 * (entered - self.left):
                self.frozen += 1
            if self.calls == TRIALS + 8 and self.frozen >= 4:
                raise RuntimeError(f"FROZEN: stopped between {self.frozen} of 7 timed calls "
                                   "despite the helpers")
        self.watch.slots.setdefault(x.data_ptr(), x)
        done = self.watch.ready.get(x.data_ptr())
        if done is not None and done[0] == _sample(x):
            out = done[1]
        else:
            out = _relu(self.lib, x)
        self.left = time.monotonic_ns()
        return out
