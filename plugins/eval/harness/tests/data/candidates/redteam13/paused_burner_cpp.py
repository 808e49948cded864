"""A neighbour that works while it is paused for another job's timing loop (native: the
Python guard refuses ctypes' own dlopen/dlsym from a Python candidate, paused_burner).

Where the server has no cgroup freezer (this VM), _pause_neighbours stops a neighbour's
processes with SIGSTOP (signal_tree) and starts the loop; nothing looks at them again
until _resume_neighbours continues them (_advance_pause waits for cgroups only). The
native start() arms a POSIX timer of this process whose signal is SIGCONT (every 2 ms: a
stop lasts at most one tick) and starts two threads. Python marks when the main thread
starts and stops waiting for a command (reporter.Channel.command, patched); in the trial
phase that wait is milliseconds, unless the server holds this job's steps because
another job's loop has the device (then this job is paused). From WAIT_MS into such a
wait the two threads spin (both cores) until the next command comes, i.e. beside the
other job's timed calls. It never times itself (trials only). Its trials are honest
(ReLU), each slowed by a sleep so that it stays in its trial phase long. What it did is
printed to stderr (its response's log)."""
import ctypes
import sys
import time

import torch
import torch.nn as nn

import kforge_cpp
from kforge_harness.protocol import reporter

cpp_source = r'''
#include <atomic>
#include <csignal>
#include <cstdint>
#include <ctime>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

static int timer_id = -1;
static std::atomic<int64_t> waiting_since{0}, burned_ns{0}, episodes{0};
static const int64_t WAIT_NS = 150000000;

static int64_t now_ns() {
  struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void* burner(void* first) {
  int64_t counted_for = 0;
  volatile double sink = 0;
  for (;;) {
    int64_t since = waiting_since.load();
    int64_t now = now_ns();
    if (since != 0 && now - since > WAIT_NS) {
      if (first && counted_for != since) { counted_for = since; episodes.fetch_add(1); }
      int64_t start = now_ns();
      for (int i = 0; i < 200000; ++i) sink = sink * 1.0000001 + 1.0;
      if (first) burned_ns.fetch_add(now_ns() - start);
    } else {
      struct timespec nap = {0, 1000000};
      nanosleep(&nap, nullptr);
    }
  }
  return nullptr;
}

extern "C" int start() {
  struct sigevent event = {};
  event.sigev_notify = SIGEV_SIGNAL;
  event.sigev_signo = SIGCONT;
  if (syscall(SYS_timer_create, CLOCK_MONOTONIC, &event, &timer_id) != 0) return -1;
  struct itimerspec spec = {};
  spec.it_interval.tv_nsec = 2000000;
  spec.it_value.tv_nsec = 2000000;
  if (syscall(SYS_timer_settime, timer_id, 0, &spec, nullptr) != 0) return -2;
  pthread_t a, b;
  if (pthread_create(&a, nullptr, burner, (void*)1) != 0) return -3;
  if (pthread_create(&b, nullptr, burner, nullptr) != 0) return -4;
  return 0;
}

extern "C" void mark_wait(int64_t on) { waiting_since.store(on ? now_ns() : 0); }
extern "C" int64_t burned_ms() { return burned_ns.load() / 1000000; }
extern "C" int64_t long_waits() { return episodes.load(); }

extern "C" void relu(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
'''

SLEEP_S = 0.15

_lib = kforge_cpp.load(cpp_source)
_lib.burned_ms.restype = ctypes.c_int64
_lib.long_waits.restype = ctypes.c_int64
_started = _lib.start()
_original_command = reporter.Channel.command


def _command(self):
    _lib.mark_wait(ctypes.c_int64(1))
    try:
        return _original_command(self)
    finally:
        _lib.mark_wait(ctypes.c_int64(0))


reporter.Channel.command = _command


class ModelNew(nn.Module):
    def forward(self, x):
        time.sleep(SLEEP_S)
        print(f"paused_burner_cpp: start() {_started}, {_lib.long_waits()} long waits, "
              f"{_lib.burned_ms()} ms spun in them (per thread)", file=sys.stderr, flush=True)
        y = torch.empty_like(x)
        _lib.relu(kforge_cpp.ptr(x), kforge_cpp.ptr(y), ctypes.c_int64(x.numel()))
        return y
