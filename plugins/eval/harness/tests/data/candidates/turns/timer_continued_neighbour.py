"""A neighbour that continues itself while another job's loop has the device: at build it
installs a SIGCONT handler, arms a POSIX timer of its own process whose signal is
SIGCONT every 10 ms, and starts a native thread that counts as fast as it can. Stopped
by signals for the other job's loop, each tick continues it and the thread works beside
that loop (a cgroup freeze holds it whatever the ticks). Its trials sleep, so that it is
still running when the other job's loop starts; each forward reports the thread's count."""
import ctypes
import time

import torch

import kforge_cpp

cpp_source = r'''
#include <atomic>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <thread>

static std::atomic<long long> counted{0};
static void on_cont(int) {}

extern "C" int start() {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = on_cont;
  action.sa_flags = SA_RESTART;
  if (sigaction(SIGCONT, &action, nullptr) != 0) return -1;
  struct sigevent event;
  memset(&event, 0, sizeof event);
  event.sigev_notify = SIGEV_SIGNAL;
  event.sigev_signo = SIGCONT;
  timer_t timer;
  if (timer_create(CLOCK_MONOTONIC, &event, &timer) != 0) return -2;
  struct itimerspec every;
  memset(&every, 0, sizeof every);
  every.it_interval.tv_nsec = 10000000;
  every.it_value.tv_nsec = 10000000;
  if (timer_settime(timer, 0, &every, nullptr) != 0) return -3;
  std::thread([] { for (;;) counted.fetch_add(1); }).detach();
  return 0;
}

extern "C" long long count() { return counted.load(); }

extern "C" void relu_forward(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
'''

_lib = kforge_cpp.load(cpp_source)
_lib.count.restype = ctypes.c_longlong


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        started = _lib.start()
        print(f"timer_continued_neighbour: started {started}", flush=True)

    def forward(self, x):
        time.sleep(0.1)
        print(f"timer_continued_neighbour: counted {_lib.count()}", flush=True)
        x = x.contiguous()
        y = torch.empty_like(x)
        _lib.relu_forward(kforge_cpp.ptr(x), kforge_cpp.ptr(y), ctypes.c_int64(x.numel()))
        return y
