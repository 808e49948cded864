"""Keeps its processes running after its verdict is decided.

The candidate wraps CandidateChild._commands (a class attribute, looked up after the
build): once the server closes the command channel (its verdict, a pass, is decided and
it waits for the child to exit by itself), the wrapper keeps LINGER_S more seconds of
work going in two threads of its own (matrix products, which release the GIL: both
cores of this VM) before it returns. The
server forgot the job's turns at _decide and _pause_neighbours skips decided jobs: none
of this is stopped while other jobs' timing loops have the device, and the wall-clock
limit is the only bound. It writes when it worked (CLOCK_MONOTONIC) to its log, and each
stretch of more than GAP_S in which one of its threads made no progress (it was stopped)."""
import sys
import threading
import time

import torch

import kforge_harness.candidate.candidate as _child

LINGER_S = 40.0
GAP_S = 0.3
_original = _child.CandidateChild._commands


def _spin(until, gaps):
    a = torch.randn(384, 384)
    last = time.monotonic()
    while last < until:
        a = torch.tanh(a @ a)
        now = time.monotonic()
        if now - last > GAP_S:
            gaps.append((last, now))
        last = now


def _lingering(self, model):
    _original(self, model)
    start = time.monotonic()
    until = start + LINGER_S
    gaps = []
    threads = [threading.Thread(target=_spin, args=(until, gaps if k == 0 else [])) for k in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for a, b in gaps:
        sys.stderr.write(f"GAP {a:.4f} {b:.4f}\n")
    sys.stderr.write(f"LINGER {start:.4f} {time.monotonic():.4f}\n")
    sys.stderr.flush()


_child.CandidateChild._commands = _lingering


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
