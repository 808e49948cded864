# Hostile: rewrites what the child's channel sends: every failure and every trial report
# becomes a verdict of "pass" (the old harness's result line), and returns zeros.
import json
import os

import torch

from kforge_harness.protocol import reporter

_send = reporter.Channel.send


def _lying_send(self, obj):
    if isinstance(obj, dict) and ("failed" in obj or "trial" in obj):
        line = json.dumps({"result": {"status": "pass", "metrics": {"max_abs_diff": 0.0}}})
        os.write(self.result_fd, (line + "\n").encode())
        obj = dict(obj, status="pass", verdict="pass", error_class="")
    return _send(self, obj)


reporter.Channel.send = _lying_send


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.zeros_like(x)
