"""A neighbour that works while it is paused for another job's timing loop.

Where the server has no cgroup freezer (this VM), _pause_neighbours stops a neighbour's
processes with SIGSTOP (signal_tree) and starts the loop; nothing looks at them again
until _resume_neighbours continues them (_advance_pause only waits for cgroups). This
candidate arms a POSIX timer of its own process whose signal is SIGCONT (every 2 ms): a
stop lasts at most one tick. A thread watches how long the main thread has been waiting
for its next command: in the trial phase that is milliseconds, unless the server holds
this job's steps because another job's loop has the device (then the job is paused). From
WAIT_S into such a wait it keeps both cores busy (matrix products, GIL released) until
the next command comes, i.e. beside the other job's timed calls. It never times itself
(the request asks for trials only), so no freeze of its own ever looks at it. Its trials
are honest (ReLU), each one slowed by SLEEP_S so that it stays in its trial phase long.
What it did is printed to stderr (its response's log)."""
import ctypes
import sys
import threading
import time

import torch
import torch.nn as nn

from kforge_harness.protocol import reporter

WAIT_S = 0.15
SLEEP_S = 0.15
PERIOD_NS = 2_000_000

_libc = ctypes.pythonapi  # dlopen(NULL) made when ctypes was first imported: libc's symbols too


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class _Itimerspec(ctypes.Structure):
    _fields_ = [("it_interval", _Timespec), ("it_value", _Timespec)]


class _Sigevent(ctypes.Structure):
    _fields_ = [("sigev_value", ctypes.c_void_p), ("sigev_signo", ctypes.c_int),
                ("sigev_notify", ctypes.c_int), ("_pad", ctypes.c_byte * 48)]


_timer = ctypes.c_void_p()
_state = {"waiting_since": None, "episodes": 0, "burned_s": 0.0, "timer": None, "commands": 0}


def _start_timer():
    sev = _Sigevent()
    sev.sigev_signo = 18  # SIGCONT
    sev.sigev_notify = 0  # SIGEV_SIGNAL
    if _libc.timer_create(1, ctypes.byref(sev), ctypes.byref(_timer)) != 0:
        _state["timer"] = "timer_create failed"
        return
    spec = _Itimerspec(_Timespec(0, PERIOD_NS), _Timespec(0, PERIOD_NS))
    rc = _libc.timer_settime(_timer, 0, ctypes.byref(spec), None)
    _state["timer"] = "armed" if rc == 0 else "timer_settime failed"


_original_command = reporter.Channel.command


def _command(self):
    _state["waiting_since"] = time.monotonic()
    try:
        return _original_command(self)
    finally:
        _state["waiting_since"] = None
        _state["commands"] += 1


def _burn():
    a = torch.randn(512, 512)
    counted = False
    while True:
        since = _state["waiting_since"]
        if since is not None and time.monotonic() - since > WAIT_S:
            if not counted:
                counted = True
                _state["episodes"] += 1
            t0 = time.monotonic()
            for _ in range(4):
                torch.mm(a, a)
            _state["burned_s"] += time.monotonic() - t0
        else:
            counted = False
            time.sleep(0.002)


reporter.Channel.command = _command
_start_timer()
threading.Thread(target=_burn, daemon=True).start()


class ModelNew(nn.Module):
    def forward(self, x):
        time.sleep(SLEEP_S)
        print(f"paused_burner: timer {_state['timer']}, {_state['commands']} commands, "
              f"{_state['episodes']} long waits, burned {_state['burned_s'] * 1e3:.0f} ms of "
              "matrix products in them", file=sys.stderr, flush=True)
        return torch.relu(x)
