"""Keeps working after its verdict, in the kernel, where a freeze does not land.

Like red team 10's linger_after_verdict (a `compile` request: decided at its child's
`ready`, the server waits for the child to exit by itself), but each of its two threads
works in long system calls: an anonymous mmap of POPULATE_MB with MAP_POPULATE, whose
pages the kernel zeroes and maps in one call (seconds on this VM), then its munmap. The
server pauses a decided job while other jobs' loops run, but _pause_neighbours only
starts the freeze (cgroup.start_freeze(), or SIGSTOP) and lets the loop begin at once: a
task of the cgroup stops only when it next leaves the kernel, and a page population
checks for fatal signals only. It writes each call's span (CLOCK_MONOTONIC) to its log:
"KWORK start end"."""
import mmap
import sys
import threading
import time

import torch

import kforge_harness.candidate.candidate as _child

LINGER_S = 45.0
POPULATE_MB = 1024
MAP_POPULATE = 0x8000  # x86_64 and aarch64
_original = _child.CandidateChild._commands


def _work(until, spans):
    while time.monotonic() < until:
        start = time.monotonic()
        area = mmap.mmap(-1, POPULATE_MB << 20,
                         flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | MAP_POPULATE)
        area.close()
        spans.append((start, time.monotonic()))


def _lingering(self, model):
    _original(self, model)
    start = time.monotonic()
    spans = [[], []]
    threads = [threading.Thread(target=_work, args=(start + LINGER_S, spans[k])) for k in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for a, b in spans[0] + spans[1]:
        sys.stderr.write(f"KWORK {a:.4f} {b:.4f}\n")
    sys.stderr.write(f"LINGER {start:.4f} {time.monotonic():.4f}\n")
    sys.stderr.flush()


_child.CandidateChild._commands = _lingering


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
