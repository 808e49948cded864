"""The dynamic anti-cheat checks (README.md, "Anti-cheat"): what is observed around a
forward call, in the process that ran it, and what the judge concludes from it.

Observed (in the reference worker and the candidate child alike), as plain data:
- inputs changed: a checksum of every input before and after the forward
  (outputs.digest); a difference means the forward wrote into its inputs;
- aliasing: which output leaf shares memory with which input;
- poisoned allocator (candidate child only): before each forward, blocks of the
  reference outputs' sizes are allocated, filled with 0xFF bytes (NaN for floats) and
  freed, so an output the candidate never writes reads as NaN rather than whatever an
  earlier trial left there.

Concluded (in the judge, `verdict`): a candidate that changes an input the reference
leaves alone, or returns an input (or a view of one) where the reference returns new
memory, is rejected (cheat_detected). The candidate's process never holds the
reference's outputs, so Sakana's exploit (reading the reference's freed output memory)
has nothing to find there."""

import torch

from kforge_harness import protocol
from kforge_harness.judge.outputs import digest, flat_leaves


def tensors_in(obj):
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for item in obj for t in tensors_in(item)]
    if isinstance(obj, dict):
        return [t for item in obj.values() for t in tensors_in(item)]
    return []


def storage_span(tensor):
    """[start, end) of the memory that backs `tensor` (its whole storage)."""
    try:
        storage = tensor.untyped_storage()
    except AttributeError:  # torch < 2.0
        storage = tensor.storage()
    start = storage.data_ptr()
    return start, start + storage.nbytes()


def shares_memory(a, b):
    if a.device != b.device:
        return False
    (a0, a1), (b0, b1) = storage_span(a), storage_span(b)
    return a0 < b1 and b0 < a1 and a1 > a0 and b1 > b0


def aliasing(outputs, others):
    """Indices [output, other] of the first output leaf that shares memory with one of
    `others`, or None."""
    for i, out in enumerate(flat_leaves(outputs)):
        if not isinstance(out, torch.Tensor):
            continue
        for j, other in enumerate(others):
            if shares_memory(out, other):
                return [i, j]
    return None


def input_digests(inputs):
    return [digest(value) for value in inputs]


def changed_inputs(before, after):
    """Positions whose digest changed across a forward."""
    return [i for i, (b, a) in enumerate(zip(before, after)) if b != a]


def poison_allocator(sizes_in_bytes, device):
    """Allocates, fills with 0xFF and frees one block per size."""
    blocks = [torch.empty(size, dtype=torch.uint8, device=device) for size in sizes_in_bytes]
    for block in blocks:
        block.fill_(0xFF)
    del blocks


def verdict(reference, observed, label):
    """A cheat_detected Verdict when the candidate's `observed` facts of one trial
    (changed_inputs, aliased) show a cheat the `reference`'s facts (mutates_inputs,
    aliases_inputs) do not excuse; else None."""
    changed = observed.get("changed_inputs") or []
    if changed and not reference.get("mutates_inputs"):
        return protocol.Verdict(
            protocol.CHEAT_DETECTED,
            f"{label}: the candidate changed input #{changed[0]} in place; the reference "
            "leaves its inputs unchanged")
    # View-like tasks (the reference returns a view of its input) may alias inputs.
    aliased = observed.get("aliased")
    if aliased is not None and not reference.get("aliases_inputs"):
        return protocol.Verdict(
            protocol.CHEAT_DETECTED,
            f"{label}: output #{aliased[0]} shares memory with input #{aliased[1]}; the "
            "reference's output is new memory")
    return None
