"""Memoizes by the arguments' content: a digest of their bytes, values and strides. A
kernelbenchx timed unit's arguments are made by the task host from a seed drawn for that
call, so no content repeats across units; the calls the test makes with the same
arguments at every seed (the fixed cases written in the task file, which this memo would
answer correctly and for free) are left out of the unit. It prints each hit, saying
whether a trial or a timed unit made it. Expected: no hit while timed, no gain."""
import hashlib

import torch

_memo = {}


def _digest(*values):
    digest = hashlib.sha256()
    for value in values:
        if isinstance(value, torch.Tensor):
            digest.update(repr((value.dtype, tuple(value.shape), value.stride())).encode())
            digest.update(value.detach().contiguous().cpu().numpy().tobytes())
        else:
            digest.update(repr(value).encode())
    return digest.hexdigest()


def _computed(key, compute, first):
    if key in _memo:
        # In its log, what the test looks for: a timed unit's arguments are views of
        # the lent slot (_base set), a trial's are the test code's own tensors.
        print(f"memo_content: memo hit ({'timed' if first._base is not None else 'trial'})")
        return _memo[key]
    _memo[key] = compute()
    return _memo[key]


def addmm_relu(bias, a, b, alpha=1.0):
    return _computed(_digest(bias, a, b, alpha), lambda: torch.relu(torch.addmm(bias, a, b, alpha=alpha)), a)


def matmul_chain(a, b):
    return _computed(_digest(a, b), lambda: torch.relu(torch.mm(a, b)), a)
