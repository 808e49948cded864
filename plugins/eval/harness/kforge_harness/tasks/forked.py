"""Calling a function in a forked child and getting its JSON-able result back.

The fitter runs the task's reference in children: a child's peak memory is a clean
measure, whatever the child does to global state (RNG, default dtype, sys.modules, the
device) dies with it, and a child that hangs or crashes is killed or reported instead of
taking the caller down."""

import json
import os
import select
import signal
import sys
import time
import traceback

import torch

from kforge_harness.sandbox import isolation


class ChildFailed(Exception):
    """The child gave no result: `kind` is "timeout", "killed" (SIGKILL: the kernel's
    out-of-memory killer, usually) or "died" (another signal or exit status)."""

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind


def _write_all(fd, data):
    while data:
        data = data[os.write(fd, data):]


def _describe(status):
    if os.WIFSIGNALED(status):
        return f"signal {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exit status {os.WEXITSTATUS(status)}"


def call(function, timeout_s):
    """function() in a forked child; returns what it returned (through JSON). Raises
    ChildFailed when the child ends without a result or runs past `timeout_s`."""
    read_fd, write_fd = os.pipe()
    threaded = len(os.listdir("/proc/self/task")) > 1
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the child never returns into the caller's code
        status = 1
        try:
            os.close(read_fd)
            isolation.die_with_parent(parent)
            # What the task prints goes to the log (stderr): the caller's stdout may be a
            # protocol channel (the harness server's).
            os.dup2(2, 1)
            if threaded:
                # libgomp's thread pool does not survive fork: the child of a process that
                # ran parallel CPU work hangs in its first parallel region unless it uses
                # one thread (measured with torch 1.13: a matmul never returns).
                torch.set_num_threads(1)
            _write_all(write_fd, json.dumps(function()).encode())
            status = 0
        except BaseException:  # noqa: BLE001 - reported by the parent as a death
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(status)
    os.close(write_fd)
    chunks, deadline = [], time.monotonic() + timeout_s
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([read_fd], [], [], left)[0]:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                raise ChildFailed("timeout", f"it ran for more than {timeout_s:g} s")
            chunk = os.read(read_fd, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(read_fd)
    _, status = os.waitpid(pid, 0)
    if not chunks or status != 0:
        killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        raise ChildFailed("killed" if killed else "died",
                          f"its process ended without a result ({_describe(status)})")
    return json.loads(b"".join(chunks))
