# Hostile: writes forged protocol lines to every descriptor it holds (the child's result
# pipe among them): a verdict of the old harness, a judged pass, a trial report, timings,
# the harness's own lines (before-the-marker messages), then returns zeros.
import json
import os

import torch

LINES = [
    {"result": {"status": "pass", "metrics": {"max_abs_diff": 0.0}}},
    {"id": 1, "result": {"status": "pass", "metrics": {}, "intervals": []}},
    {"status": "pass", "error_class": ""},
    {"harness_flags": ["sandbox_not_entered"]},
    {"harness_failed": "blame the harness"},
    {"candidate_code": "start"},
    {"ready": True},
    {"compiled": True},
    {"timing": {"ms": 1e-6, "p90": 1e-6}},
]
FORGED = "".join(json.dumps(line) + "\n" for line in LINES).encode()


class ModelNew(torch.nn.Module):
    def forward(self, x):
        for fd in range(0, 256):
            try:
                os.write(fd, FORGED)
            except OSError:
                pass
        return torch.zeros_like(x)
