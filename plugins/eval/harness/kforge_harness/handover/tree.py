"""Inputs nested in lists, tuples and dicts, crossing by buffer as flat leaves and a
skeleton that puts them back together.

Why: an input the task host cannot lay out in a slot is made in the candidate's child
from the seed, and then only the child holds it: no one checks that a call left it
unchanged (red team 17: a forward computed in place on a tensor given beside a list of
scales passed at 12.7x, 1.24x over an honest kernel that allocates nothing). Laid out
here, every tensor in such an input lies in the slot like any other, and every number
in it crosses as an inline value: the task host fills them, and checks them after a
checked call as it does a plain tensor input. A value no layout describes (an object of
the task's own class, a namedtuple, an OrderedDict) is a "made" node: the child makes
the call's inputs from its seed and takes that value from them, and everything else
from the slot. What an object holds in its instance dictionary is laid out too (its
"attrs"), and written over the made object's own in the child: a tensor an object holds
lies in the slot like any other. Only what a made value holds elsewhere (a namedtuple's
fields, slots, a closure) goes unchecked (README, "What it does not protect"); inputs
with nothing to lay out at all (a kernelbenchx test run) are made in the child whole,
as they always were.

The skeleton is JSON: one node per top-level input, where a node is the index of a flat
leaf, {"list": [nodes]}, {"tuple": [nodes]}, {"dict": [[key, node], ...]} (keys kept
as they are: strings, numbers, booleans, None) or {"made": null, "attrs": [[name, node],
...]} ("attrs" only where the object has attributes to lay out)."""

import numpy as np
import torch

PLAIN = (bool, int, float, str, type(None))
_CONTAINERS = {list: "list", tuple: "tuple", dict: "dict"}
MADE = {"made": None}
# A list or tuple of more plain values than this is made by the child from the seed, not
# carried inline: a timed call's command carries its inline values, and their JSON costs
# every call (20000 floats: 14 ms to decode on a 2-core VM). Numbers in a list hold
# nothing a forward could change for the next call.
MAX_INLINE_VALUES = 65536


class Flat:
    """Inputs as flat leaves: `leaves` (tensors, NumPy arrays and scalars, plain values)
    in depth-first order, `tree` (the skeleton; None where every input is a leaf
    itself, the common case, whose layout is as it always was) and `unchecked` (whether
    a value made in the child may hold what no layout describes)."""

    def __init__(self, leaves, tree, unchecked):
        self.leaves, self.tree, self.unchecked = leaves, tree, unchecked


def _is_leaf(value):
    return isinstance(value, PLAIN) or isinstance(value, (torch.Tensor, np.ndarray, np.generic))


def attributes_of(value):
    """An object's instance dictionary, where it has a plain one (not a class's, not a
    module's), else None."""
    if isinstance(value, type) or type(value).__name__ == "module":
        return None
    try:
        attributes = vars(value)
    except TypeError:  # no __dict__ (slots, a builtin's value)
        return None
    return attributes if type(attributes) is dict else None


def flatten(inputs):
    """The Flat of a forward's inputs, or None when nothing in them can cross by buffer."""
    leaves = []
    inside = set()  # ids of the objects being laid out: a cycle is left to the child
    unchecked = False

    def node(value):
        nonlocal unchecked
        if _is_leaf(value):
            leaves.append(value)
            return len(leaves) - 1
        if id(value) in inside:
            return dict(MADE)
        # Exactly these types: a subclass (a namedtuple, an OrderedDict) would come back
        # as its base, which a forward may tell apart.
        kind = _CONTAINERS.get(type(value))
        inside.add(id(value))
        try:
            if kind == "dict" and all(isinstance(key, PLAIN) for key in value):
                return {kind: [[key, node(item)] for key, item in value.items()]}
            if kind in ("list", "tuple"):
                if len(value) > MAX_INLINE_VALUES and all(isinstance(item, PLAIN) for item in value):
                    return dict(MADE)
                return {kind: [node(item) for item in value]}
            unchecked = True
            made = dict(MADE)
            attributes = attributes_of(value)
            if attributes:
                first = len(leaves)
                laid = [[name, node(item)] for name, item in attributes.items() if isinstance(name, str)]
                if any(not isinstance(leaf, PLAIN) for leaf in leaves[first:]):
                    made["attrs"] = [pair for pair in laid if pair[1] != MADE]
                else:
                    # No tensor in it: the object is the child's as made (a
                    # kernelbenchx test run's seed stays in it).
                    del leaves[first:]
            return made
        finally:
            inside.discard(id(value))

    tree = [node(value) for value in inputs]
    if inputs and not leaves:
        return None
    if all(isinstance(item, int) for item in tree):
        tree = None
    return Flat(leaves, tree, unchecked)


def _children(node):
    """(key, child) of a node that holds others: positions for a list or tuple, keys for
    a dict, attribute names for a made object."""
    if "made" in node:
        return [(name, child) for name, child in node.get("attrs", ())]
    (kind, items), = node.items()
    return [(item[0], item[1]) for item in items] if kind == "dict" else list(enumerate(items))


def makes(tree):
    """Whether the child must make the call's inputs from its seed (a "made" node)."""
    def has(node):
        return not isinstance(node, int) and ("made" in node or any(has(child) for _, child in _children(node)))
    return tree is not None and any(has(node) for node in tree)


def rebuild(tree, leaves, made=None):
    """The inputs a forward is given: `leaves` (views of the slot, inline values) put
    back in the skeleton, in new containers every time (a forward that changes a list it
    was given changes only its own); a "made" node's value taken from `made`, the same
    call's inputs made from its seed (makes())."""
    def build(node, twin):
        if isinstance(node, int):
            return leaves[node]
        if "made" in node:
            if twin is None:
                raise ValueError("the inputs' layout needs values made from the seed, and none were made")
            # Written into the instance dictionary as the task host read it: no
            # __setattr__ of the object's runs (a frozen dataclass refuses one).
            if "attrs" in node:
                attributes = vars(twin)
                for name, child in _children(node):
                    attributes[name] = build(child, attributes.get(name))
            return twin
        (kind, _), = node.items()
        built = [build(child, None if twin is None else twin[key]) for key, child in _children(node)]
        if kind == "dict":
            return {key: value for (key, _), value in zip(_children(node), built)}
        return built if kind == "list" else tuple(built)
    return [build(node, None if made is None else made[position]) for position, node in enumerate(tree)]


def leaves_of(tree, inputs):
    """The flat leaves that belong to the top-level inputs at positions `inputs` (those
    the reference's own forward changes, which a candidate's may change too)."""
    if tree is None:
        return set(inputs)
    found = set()

    def collect(node):
        if isinstance(node, int):
            found.add(node)
        else:
            for _, child in _children(node):
                collect(child)
    for position in inputs:
        if position < len(tree):
            collect(tree[position])
    return found


def where(tree, leaf):
    """The place of flat leaf `leaf` among the inputs, as a user reads it: "input #1",
    or "input #1[0]['scale']" inside a container."""
    if tree is None:
        return f"input #{leaf}"

    def find(node, path):
        if isinstance(node, int):
            return path if node == leaf else None
        for key, child in _children(node):
            found = find(child, f"{path}.{key}" if "made" in node else f"{path}[{key!r}]")
            if found is not None:
                return found
        return None
    for position, node in enumerate(tree):
        found = find(node, f"input #{position}")
        if found is not None:
            return found
    return f"input leaf #{leaf}"
