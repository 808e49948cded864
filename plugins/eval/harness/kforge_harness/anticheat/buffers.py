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
  call (at a secret sample of their elements, Sampler) are a memo, a cache or a
  constant; such a call is always compared with the reference.

A trial's inputs are checked by digest; a timed call's only when it is checked (with the
same seed's inputs made again): a candidate that writes into its inputs on every call is
checked on a quarter of them."""

import secrets

import torch

from kforge_harness import protocol
from kforge_harness.handover import tree as handover_tree
from kforge_harness.judge.outputs import digest, surely_finite

POISON_BYTE = 0xFF


def poison(mapping):
    mapping.raw.fill_(POISON_BYTE)


def digests(views):
    return [digest(v) if isinstance(v, torch.Tensor) else None for v in views]


def changed_inputs(views, before, allowed):
    """Positions whose bytes changed since `before` (digests()) and are not `allowed`."""
    return [i for i, (view, was) in enumerate(zip(views, before))
            if was is not None and i not in allowed and digest(view) != was]


def inputs_verdict(label, changed, timed, tree=None):
    """`changed`: flat leaves of the inputs' layout; `tree` its skeleton (handover/tree.py)."""
    if not changed:
        return None
    during = " during a timed call" if timed else ""
    return fail(protocol.CHEAT_DETECTED,
                f"{label}: the candidate changed {handover_tree.where(tree, changed[0])} in place"
                f"{during}; the reference's forward leaves it unchanged")


def differing(views, made, allowed):
    """Positions whose bytes differ from the same seed's inputs made again (`made`), the
    ones the reference's own forward changes excepted."""
    found = []
    for i, (view, value) in enumerate(zip(views, made)):
        if i in allowed or not isinstance(view, torch.Tensor):
            continue
        value = torch.as_tensor(value).to(view.device)
        if value.shape != view.shape or not _same_bytes(view, value.contiguous()):
            found.append(i)
    return found


def _same_bytes(a, b):
    """Whether two tensors hold the same bytes, compared as the widest integers that tile
    both (over int64 words torch.equal reads 4 GB in a third of the time it takes over
    bytes)."""
    a, b = a.reshape(-1).view(torch.uint8), b.reshape(-1).view(torch.uint8)
    if a.numel() != b.numel():
        return False
    for dtype, width in ((torch.int64, 8), (torch.int32, 4), (torch.int16, 2)):
        if a.numel() % width == 0 and a.data_ptr() % width == 0 and b.data_ptr() % width == 0:
            return torch.equal(a.view(dtype), b.view(dtype))
    return torch.equal(a, b)


def unwritten(views):
    """Elements of floating outputs still poisoned (NaN): a sum per output (surely_finite),
    and a count only where one is not finite."""
    floating = [v for v in views if isinstance(v, torch.Tensor) and (v.is_floating_point() or v.is_complex())]
    if surely_finite(floating):
        return 0
    return sum(int(torch.isnan(v).sum()) for v in floating)


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


class Sampler:
    """Fingerprints of a session's outputs that read a fixed random sample of each
    output's elements (SAMPLE of them, drawn once per session by the host, secretly):
    enough to tell an output repeated byte for byte from a fresh one, at the cost of a
    gather instead of a pass over GBs."""

    SAMPLE = 1 << 16

    def __init__(self):
        self.indices = {}

    def fingerprint(self, views):
        parts = []
        for position, view in enumerate(v for v in views if isinstance(v, torch.Tensor)):
            flat = view.reshape(-1)
            if flat.numel() <= self.SAMPLE:
                parts.append(digest(flat))
                continue
            key = (position, flat.numel(), flat.device)
            if key not in self.indices:
                generator = torch.Generator().manual_seed(secrets.randbelow(1 << 62))
                picked = torch.randint(0, flat.numel(), (self.SAMPLE,), generator=generator)
                self.indices[key] = picked.to(flat.device)
            parts.append(digest(flat[self.indices[key]]))
        return tuple(parts)


def fail(error_class, message, metrics=None):
    return {"status": "fail", "error_class": error_class, "message": message,
            "metrics": metrics or {}}
