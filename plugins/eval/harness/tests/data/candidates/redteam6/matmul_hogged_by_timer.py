"""matmul_eightfold (x @ w, the reference computes it eight times over) with CPU hogs
continued by POSIX timers while the reference is timed anew, as
confirm_reference_hogged_by_timer, against a compute-bound reference: the hogs spin on
the ALU. Trials run a naive C++ matmul (the compute guard watches trials); timed calls
run torch's matmul (a cpp candidate's timed calls are not guarded: a documented hole,
used here only so that the honest control, matmul_timer_control, is as fast; its
outputs are still judged). Where the server freezes by signals the timers continue the
process during the confirmation's reference loop."""

import ctypes
import json as _json
import sys
import types

import torch

import kforge_cpp
import kforge_harness.protocol.reporter as _reporter

LAST_CALL = 3 + 20 - 1
HOGS = True

cpp_source = r'''
#include <atomic>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <thread>
#include <vector>

extern "C" void matmul(const float* a, const float* b, float* c, int64_t n) {
  #pragma omp parallel for
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) c[i * n + j] = 0.f;
    for (int64_t k = 0; k < n; ++k) {
      float aik = a[i * n + k];
      for (int64_t j = 0; j < n; ++j) c[i * n + j] += aik * b[k * n + j];
    }
  }
}

static std::atomic<int> burn{0};
static std::atomic<long long> rounds{0};

extern "C" long long burned() { return rounds.load(); }
static std::atomic<int> continued{0};
static long long cont_at[256];
static long long mono_ms() {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return now.tv_sec * 1000LL + now.tv_nsec / 1000000;
}
static void on_cont(int) {
  int k = continued.fetch_add(1);
  if (k < 256) cont_at[k] = mono_ms();
}
extern "C" long long cont_time(int k) { return k < 256 ? cont_at[k] : 0; }
extern "C" long long now_ms() { return mono_ms(); }
extern "C" int conts() { return continued.load(); }
extern "C" void watch_cont() {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = on_cont;
  action.sa_flags = SA_RESTART;
  sigaction(SIGCONT, &action, nullptr);
}
static const size_t BLOCK = 16u << 20;

static void hog() {
  std::vector<char> a(BLOCK, 1), b(BLOCK, 2);
  for (;;) {
    if (burn.load()) {
      volatile double acc = 1.0;
      for (int k = 0; k < 2000000; ++k) acc = acc * 1.0000001 + 1e-9;
      rounds.fetch_add(1);
    } else {
      struct timespec pause = {0, 1000000};
      nanosleep(&pause, nullptr);
    }
  }
}

static std::atomic<long long> ticks{0};
static void ticker() {
  for (;;) {
    struct timespec pause = {0, 5000000};
    nanosleep(&pause, nullptr);
    ticks.fetch_add(1);
  }
}
extern "C" long long ticked() { return ticks.load(); }

extern "C" void start_hogs(int n) {
  std::thread(ticker).detach();
  for (int i = 0; i < n; ++i) std::thread(hog).detach();
}

extern "C" void set_burn(int on) { burn.store(on); }

static const int MAX_TIMERS = 128;
static timer_t timers[MAX_TIMERS];
static int armed = 0;

extern "C" int arm(int count, int64_t spacing_ms) {
  struct sigevent event;
  memset(&event, 0, sizeof event);
  event.sigev_notify = SIGEV_SIGNAL;
  event.sigev_signo = SIGCONT;
  if (count > MAX_TIMERS) count = MAX_TIMERS;
  for (int i = 0; i < count; ++i) {
    if (timer_create(CLOCK_MONOTONIC, &event, &timers[armed]) != 0) return -1;
    struct itimerspec when;
    memset(&when, 0, sizeof when);
    int64_t ns = (int64_t)(i + 1) * spacing_ms * 1000000;
    when.it_value.tv_sec = ns / 1000000000;
    when.it_value.tv_nsec = ns % 1000000000;
    timer_settime(timers[armed], 0, &when, nullptr);
    ++armed;
  }
  return armed;
}

extern "C" void disarm() {
  for (int i = 0; i < armed; ++i) timer_delete(timers[i]);
  armed = 0;
}
'''

_lib = kforge_cpp.load(cpp_source)
_lib.arm.restype = ctypes.c_int
_lib.burned.restype = ctypes.c_longlong
_lib.ticked.restype = ctypes.c_longlong
_lib.cont_time.restype = ctypes.c_longlong
_lib.now_ms.restype = ctypes.c_longlong
_state = {"label": None, "call": None}


def _loads(line, *args, **kwargs):
    command = _json.loads(line, *args, **kwargs)
    if isinstance(command, dict):
        if isinstance(command.get("time"), dict):
            # What the hogs did since the last loop (its log: the response's log_tail).
            n = _lib.conts()
            print(f"hogs: SIGCONT handled at (ms, relative to now) "
                  f"{[_lib.cont_time(k) - _lib.now_ms() for k in range(min(n, 256))]}", file=sys.stderr)
            print(f"hogs: {_lib.ticked()} ticks of 5 ms, {_lib.conts()} SIGCONT seen, {_lib.burned()} rounds before the {command['time'].get('label')} loop",
                  file=sys.stderr, flush=True)
            _state["label"] = command["time"].get("label")
            _lib.set_burn(0)
            _lib.disarm()
        elif "call" in command:
            _state["call"] = command.get("call")
    return command


_reporter.json = types.SimpleNamespace(loads=_loads, dumps=_json.dumps)
_lib.watch_cont()
_lib.start_hogs(2)
_lib.set_burn(1 if HOGS else 0)


class ModelNew(torch.nn.Module):
    def forward(self, x, w):
        if _state["call"] is None:  # a trial: C++
            x, w = x.contiguous(), w.contiguous()
            y = torch.empty_like(x)
            _lib.matmul(kforge_cpp.ptr(x), kforge_cpp.ptr(w), kforge_cpp.ptr(y), ctypes.c_int64(x.shape[0]))
        else:
            y = x @ w
        if HOGS and _state["label"] == "timing" and _state["call"] == LAST_CALL:
            _state["call"] = None
            _lib.set_burn(1)
            armed = _lib.arm(60, ctypes.c_int64(50))
            print(f"hogs: {armed} timers armed at the last call, {_lib.ticked()} ticks, "
                  f"{_lib.burned()} rounds", file=sys.stderr, flush=True)
        return y
