"""Inputs nested in lists, tuples and dicts, crossing by buffer as flat leaves and a
skeleton that puts them back together.

Why: an input the task host cannot lay out in a slot is made in the candidate's child
from the seed, and then only the child holds it: no one checks that a call left it
unchanged (red team 17: a forward computed in place on a tensor given beside a list of
scales passed at 12.7x, 1.24x over an honest kernel that allocates nothing). Laid out
here, every tensor in such an input lies in the slot like any other, and every number
in it crosses as an inline value: the task host fills them, and checks them after a
checked call as it does a plain tensor input. What is left to the child is what no
layout can describe (an object of the task's own class, a namedtuple, a kernelbenchx
test run): README, "What it does not protect".

The skeleton is JSON: one node per top-level input, where a node is the index of a flat
leaf, {"list": [nodes]}, {"tuple": [nodes]} or {"dict": [[key, node], ...]} (keys kept
as they are: strings, numbers, booleans, None)."""

import numpy as np
import torch

PLAIN = (bool, int, float, str, type(None))
_CONTAINERS = {list: "list", tuple: "tuple", dict: "dict"}


class Opaque(Exception):
    """Something in the inputs that no layout can describe."""


class Flat:
    """Inputs as flat leaves: `leaves` (tensors, NumPy arrays and scalars, plain values)
    in depth-first order and `tree` (the skeleton; None where every input is a leaf
    itself, the common case, whose layout is as it always was)."""

    def __init__(self, leaves, tree):
        self.leaves, self.tree = leaves, tree


def leaves_of(tree, inputs):
    """The flat leaves that belong to the top-level inputs at positions `inputs` (those
    the reference's own forward changes, which a candidate's may change too)."""
    if tree is None:
        return set(inputs)
    found = set()

    def collect(node):
        if isinstance(node, int):
            found.add(node)
            return
        (kind, items), = node.items()
        for item in items:
            collect(item[1] if kind == "dict" else item)
    for position in inputs:
        if position < len(tree):
            collect(tree[position])
    return found


def _is_leaf(value):
    return isinstance(value, PLAIN) or isinstance(value, (torch.Tensor, np.ndarray, np.generic))


def flatten(inputs):
    """The Flat of a forward's inputs, or None when something in them is opaque."""
    leaves = []

    def node(value):
        if _is_leaf(value):
            leaves.append(value)
            return len(leaves) - 1
        # Exactly these types: a subclass (a namedtuple, an OrderedDict) would come back
        # as its base, which a forward may tell apart.
        kind = _CONTAINERS.get(type(value))
        if kind == "dict":
            if not all(isinstance(key, PLAIN) for key in value):
                raise Opaque
            return {kind: [[key, node(item)] for key, item in value.items()]}
        if kind is not None:
            return {kind: [node(item) for item in value]}
        raise Opaque

    try:
        tree = [node(value) for value in inputs]
    except Opaque:
        return None
    if all(isinstance(item, int) for item in tree):
        tree = None
    return Flat(leaves, tree)


def rebuild(tree, leaves):
    """The inputs a forward is given: `leaves` (views of the slot, inline values) put
    back in the skeleton, in new containers every time (a forward that changes a list it
    was given changes only its own)."""
    def build(node):
        if isinstance(node, int):
            return leaves[node]
        (kind, items), = node.items()
        if kind == "list":
            return [build(item) for item in items]
        if kind == "tuple":
            return tuple(build(item) for item in items)
        return {key: build(item) for key, item in items}
    return [build(node) for node in tree]


def where(tree, leaf):
    """The place of flat leaf `leaf` among the inputs, as a user reads it: "input #1",
    or "input #1[0]['scale']" inside a container."""
    if tree is None:
        return f"input #{leaf}"

    def find(node, path):
        if isinstance(node, int):
            return path if node == leaf else None
        (kind, items), = node.items()
        for index, item in enumerate(items):
            key, child = (item[0], item[1]) if kind == "dict" else (index, item)
            found = find(child, f"{path}[{key!r}]")
            if found is not None:
                return found
        return None
    for position, node in enumerate(tree):
        found = find(node, f"input #{position}")
        if found is not None:
            return found
    return f"input leaf #{leaf}"
