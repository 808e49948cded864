# Hostile: right answers, and the child's timed call (bound before the candidate's import,
# rebound on the child's own object, found as in patch_timer.py) replaced so that it
# reports a negative time (JSON also carries NaN and Infinity): taken as it is, the
# speedup is infinite.
import threading

import torch


def _harness_child():
    found = {}
    worker = threading.Thread(target=exec, args=(
        "import gc\nchildren = [o for o in gc.get_objects() if type(o).__name__ == 'CandidateChild']\n",
        found))
    worker.start()
    worker.join()
    return found["children"][0]


_child = _harness_child()


def _negative(call):
    return call(), -1.0, float("nan"), 0.0


_child._time_call = _negative


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
