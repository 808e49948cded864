# Hostile: a right answer, computed slowly, with the child's timed call replaced so that
# it reports a call of a nanosecond: a 10^6x "speedup". The child binds that call before
# the candidate's import, so the candidate finds the child's object (the garbage
# collector's objects, walked from a thread whose target is exec, where no frame of its
# own is on the stack) and rebinds it there. Its process measures itself: the trusted
# side must not take the number on faith.
import threading
import time

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
_real_call = _child._time_call


def _instant(call):
    out, _, _, settle_ms = _real_call(call)
    return out, 1e-6, 0.0, settle_ms


_child._time_call = _instant


class ModelNew(torch.nn.Module):
    def forward(self, x):
        time.sleep(0.02)
        return torch.relu(x)
