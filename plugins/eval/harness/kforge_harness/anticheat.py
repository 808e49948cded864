"""Dynamic anti-cheat checks around a candidate's forward call (README.md, "Anti-cheat").

- inputs unchanged: the candidate gets its own copies of the inputs; after the call they
  must equal the pristine copy (unless the reference itself changes its inputs);
- no aliasing: no candidate output may share memory with a candidate input (unless the
  reference's output aliases its input too: view-like tasks) or with a reference output;
- poisoned allocator: before the candidate runs after the reference, blocks of the
  reference outputs' sizes are allocated, filled with 0xFF bytes (NaN for floats) and
  freed, so a fresh `empty_like` in the candidate gets poison, not a stale right answer
  (Sakana's exploit reused the reference's freed output). Trial 0 also runs the candidate
  BEFORE the reference, when no right answer exists in memory at all.
"""

import torch

from .compare import leaves


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
    """Indices (output, other) of the first output leaf that shares memory with one of
    `others`, or None."""
    for i, out in enumerate(leaves(outputs)):
        if not isinstance(out, torch.Tensor):
            continue
        for j, other in enumerate(others):
            if shares_memory(out, other):
                return i, j
    return None


def same_values(a, b):
    """Bit-for-bit equal values, NaN equal to NaN."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.is_floating_point() or a.is_complex():
        return bool(((a == b) | (torch.isnan(a) & torch.isnan(b))).all())
    return bool(torch.equal(a, b))


def changed_inputs(pristine, used):
    """Positions of input tensors that differ from their pristine copies."""
    return [i for i, (p, u) in enumerate(zip(tensors_in(pristine), tensors_in(used)))
            if not same_values(p, u.to(p.device))]


def poison_allocator(outputs):
    """Allocates, fills with 0xFF and frees one block per output tensor's size."""
    blocks = [torch.empty(t.numel() * t.element_size(), dtype=torch.uint8, device=t.device)
              for t in tensors_in(leaves(outputs))]
    for block in blocks:
        block.fill_(0xFF)
    del blocks
