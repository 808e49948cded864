"""Ends its own job while one of its task host's steps is in flight.

After its first trial's forward, a thread of its own waits FORGE_AFTER_S seconds (its
first trial judged meanwhile, the next trial's fill sent: a step of the job's, in flight
in its task host) and writes a forged {"failed": ...} line to the harness's channel. The
server decides the job at once (_decide), and turns.forget() drops the job's steps in
flight: a timing loop that waits for them starts now, while the task host still works on
the fill (a heavy reference recomputed, fill_spin_relu). A candidate may as well write a
trial report out of turn, or let its wall-clock limit run out during a long host step."""
import threading
import time

import torch

import kforge_harness.candidate.candidate as _child

FORGE_AFTER_S = 8.0
_original = _child.CandidateChild._trial
_started = []


def _forge(child):
    time.sleep(FORGE_AFTER_S)
    child.channel.send({"failed": {"stage": "forward", "types": ["RuntimeError"],
                                   "text": "forged", "where": ""}})


def _trial(self, model, command):
    report = _original(self, model, command)
    if not _started:
        _started.append(threading.Thread(target=_forge, args=(self,), daemon=True))
        _started[0].start()
    return report


_child.CandidateChild._trial = _trial


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
