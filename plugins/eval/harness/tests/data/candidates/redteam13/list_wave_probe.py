"""Diagnostic (not an attack): the task's own function, and the child's in-bracket steps
timed from inside (stderr): command read, lend, the timed call, its whole."""
import sys
import time

import torch

import kforge_harness.candidate.candidate as _child

_orig_timed_call = _child.CandidateChild._timed_call
_orig_lend = _child.CandidateChild._lend
_orig_loop = _child.CandidateChild._timed_loop
_log = {"lend": [], "call": [], "read": []}


def _lend(self, command):
    t0 = time.perf_counter()
    try:
        return _orig_lend(self, command)
    finally:
        _log["lend"].append((time.perf_counter() - t0) * 1e3)


def _timed_call(self, model, call):
    t0 = time.perf_counter()
    try:
        return _orig_timed_call(self, model, call)
    finally:
        _log["call"].append((time.perf_counter() - t0) * 1e3)
        n = len(_log["call"])
        med = {k: sorted(v)[len(v) // 2] if v else None for k, v in _log.items()}
        print(f"probe {n}: median ms {med}", file=sys.stderr, flush=True)


def _timed_loop(self, model):
    command = self._command

    def timed_command():
        t0 = time.perf_counter()
        out = command()
        if out is not None and "call" in out:
            _log["read"].append((time.perf_counter() - t0) * 1e3)
        return out
    self._command = timed_command
    return _orig_loop(self, model)


_child.CandidateChild._lend = _lend
_child.CandidateChild._timed_call = _timed_call
_child.CandidateChild._timed_loop = _timed_loop


def list_wave(values, scale):
    v = torch.tensor(values, dtype=torch.float32)
    return torch.sin(v * scale) * v + torch.tanh(v)
