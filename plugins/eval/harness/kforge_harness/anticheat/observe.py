"""What a forward does to its inputs, observed around it in the process that runs it:
which inputs it changed (a digest of each before and after) and which output shares
memory with an input. The task host observes the reference so (the inputs the reference
itself changes may change in a candidate too); a kernelbenchx test run observes each call
of the function so."""

import numpy as np
import torch

from kforge_harness.handover import tree
from kforge_harness.judge.outputs import digest, flat_leaves


def tensors_in(obj, inside=frozenset()):
    """The tensors in `obj`, into its lists, tuples and dicts (a container that holds
    itself is entered once)."""
    if isinstance(obj, torch.Tensor):
        return [obj]
    if id(obj) in inside:
        return []
    if isinstance(obj, (list, tuple)):
        return [t for item in obj for t in tensors_in(item, inside | {id(obj)})]
    if isinstance(obj, dict):
        return [t for item in obj.values() for t in tensors_in(item, inside | {id(obj)})]
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
    """One digest per leaf of the inputs as they cross by buffer (handover/tree.py: a
    tensor in a list is its own leaf, and a change to it is told from a change to its
    sibling), or, for inputs that do not cross, per input."""
    flat = tree.flatten(inputs)
    return [_nested_digest(value) for value in (inputs if flat is None else flat.leaves)]


def _nested_digest(value, inside=frozenset()):
    """A digest of an input, into the lists, tuples, dicts and objects' parts it holds
    tensors in, as handover/tree.py lays them out: a tensor changed inside a list or an
    object is a changed input."""
    if id(value) in inside:
        return "cycle"
    inside = inside | {id(value)}
    if type(value) in (list, tuple):
        return tuple(_nested_digest(item, inside) for item in value)
    if type(value) is dict:
        return tuple((repr(key), _nested_digest(item, inside)) for key, item in value.items())
    parts = [] if isinstance(value, (torch.Tensor, np.ndarray)) else tree.parts_of(value)
    if parts:
        return (type(value).__name__,) + tuple(
            (how, repr(key), _nested_digest(item, inside)) for how, key, item in parts)
    return digest(value)


def changed_inputs(before, after):
    """Positions (input_digests') whose digest changed across a forward."""
    return [i for i, (b, a) in enumerate(zip(before, after)) if b != a]
