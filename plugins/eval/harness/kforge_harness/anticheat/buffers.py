"""Checks the task host makes on the buffers it lends a candidate's child, after each
trial and each timed call (reference/host.py): they read bytes the child left in memory
the host owns, never an object of the child's.

- inputs: the digest of every input is taken when the host fills it; after the call a
  changed digest is a forward that wrote into its inputs (allowed where the reference's
  own forward changes that input);
- completeness: the output buffer is poisoned (every byte 0xFF, NaN in floating types)
  before each call; poison left in a floating output when the child said the call was
  done is work that was not finished within the call;
- repeats: every call's inputs are new, so outputs byte for byte those of an earlier
  call are a memo, a cache or a constant; such a call is always compared with the
  reference."""

import torch

from kforge_harness import protocol
from kforge_harness.judge.outputs import digest

POISON_BYTE = 0xFF


def poison(mapping):
    mapping.raw.fill_(POISON_BYTE)


def digests(views):
    return [digest(v) if isinstance(v, torch.Tensor) else None for v in views]


def changed_inputs(views, before, allowed):
    """Positions whose bytes changed since `before` (digests()) and are not `allowed`."""
    return [i for i, (view, was) in enumerate(zip(views, before))
            if was is not None and i not in allowed and digest(view) != was]


def inputs_verdict(label, changed, timed):
    if not changed:
        return None
    during = " during a timed call" if timed else ""
    return fail(protocol.CHEAT_DETECTED,
                f"{label}: the candidate changed input #{changed[0]} in place{during}; the "
                "reference's forward leaves it unchanged")


def unwritten(views):
    """Elements of floating outputs still poisoned (NaN)."""
    return sum(int(torch.isnan(v).sum()) for v in views
               if isinstance(v, torch.Tensor) and (v.is_floating_point() or v.is_complex()))


def completeness_verdict(label, views):
    left = unwritten(views)
    if not left:
        return None
    return fail(protocol.CHEAT_DETECTED,
                f"{label}: {left} output element(s) were not written when the candidate "
                "reported the call done (the harness poisons the output before each call): "
                "its work was not finished within the timed call")


def fingerprint(views):
    return tuple(digest(v) for v in views if isinstance(v, torch.Tensor))


def fail(error_class, message, metrics=None):
    return {"status": "fail", "error_class": error_class, "message": message,
            "metrics": metrics or {}}
