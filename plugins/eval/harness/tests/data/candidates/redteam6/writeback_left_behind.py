"""Honest ReLU once (tasks/redteam6/relu_twice), plus kernel work left behind for the
reference's confirmation loop: in the last call of its first timed loop (a single slow
call does not move the median) it writes 1 GB of dirty page cache into two files of its
work directory (on the host's disk, not tmpfs) and asks the kernel to start writing them
back (posix_fadvise DONTNEED, asynchronous). The cgroup freezer stops the candidate's
processes, not the kernel's flusher threads, the block layer and the disk's interrupts,
which then run while the server times the reference anew. Should gain nothing beyond the
control (relu_once_honest)."""
import json as _json
import os
import sys
import time
import types

import torch

import kforge_harness.protocol.reporter as _reporter

LAST_CALL = 3 + 20 - 1
FILES, FILE_MB = 2, 512
_state = {"label": None, "call": None}
_here = os.path.dirname(os.path.abspath(__file__))


def _loads(line, *args, **kwargs):
    command = _json.loads(line, *args, **kwargs)
    if isinstance(command, dict):
        if isinstance(command.get("time"), dict):
            _state["label"] = command["time"].get("label")
        elif "call" in command:
            _state["call"] = command.get("call")
    return command


_reporter.json = types.SimpleNamespace(loads=_loads, dumps=_json.dumps)


def _dirty():
    started = time.monotonic()
    block = os.urandom(1 << 20) * 64  # 64 MB
    for k in range(FILES):
        fd = os.open(os.path.join(_here, f"dirty-{k}.bin"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            for _ in range(FILE_MB // 64):
                os.write(fd, block)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
    print(f"writeback: {FILES * FILE_MB} MB dirtied in {time.monotonic() - started:.2f} s", file=sys.stderr,
          flush=True)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        out = torch.relu(x)
        if _state["label"] == "timing" and _state["call"] == LAST_CALL:
            _state["call"] = None
            _dirty()
        return out
