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
from the slot. What such a value holds where Python code can reach it (its instance
dictionary, its __slots__, the items of a list, tuple or dict it subclasses: its
"parts") is laid out too, and written over the made value's own in the child, past any
method of its class: a tensor a value holds lies in the slot like any other. Only what a
made value holds elsewhere (a closure, a C extension's state) goes unchecked (README,
"What it does not protect"); inputs with nothing to lay out at all (a kernelbenchx test
run) are made in the child whole, as they always were.

The skeleton is JSON: one node per top-level input, where a node is the index of a flat
leaf, {"list": [nodes]}, {"tuple": [nodes]}, {"dict": [[key, node], ...]} (keys kept
as they are: strings, numbers, booleans, None) or {"made": null, "parts": [[how, key,
node], ...]} (how: "attr", "slot", "item" or "index"; "parts" only where the value holds
a tensor)."""

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


def _slot(cls, name):
    """The descriptor of slot `name` in class `cls`'s hierarchy, or None."""
    for klass in cls.__mro__:
        found = klass.__dict__.get(name)
        if found is not None and type(found).__name__ == "member_descriptor":
            return found
    return None


def _slot_names(cls):
    """The names of the slots `cls` and its bases declare, as their descriptors are
    named (a private __name mangled)."""
    names = []
    for klass in cls.__mro__:
        declared = klass.__dict__.get("__slots__", ())
        for name in (declared,) if isinstance(declared, str) else declared:
            if name in ("__dict__", "__weakref__"):
                continue
            if name.startswith("__") and not name.endswith("__"):
                name = f"_{klass.__name__.lstrip('_')}{name}"
            names.append(name)
    return names


def parts_of(value):
    """(how, key, part) of what a value no layout describes holds where Python reaches
    it: the items of the list, tuple or dict it subclasses (read through the base's own
    methods), its instance dictionary and its slots."""
    parts = []
    if isinstance(value, dict):
        if all(isinstance(key, PLAIN) for key in dict.keys(value)):
            parts += [("item", key, item) for key, item in dict.items(value)]
    elif isinstance(value, (list, tuple)):
        base = list if isinstance(value, list) else tuple
        parts += [("index", index, item) for index, item in enumerate(base.__iter__(value))]
    attributes = attributes_of(value)
    if attributes:
        parts += [("attr", name, item) for name, item in attributes.items() if isinstance(name, str)]
    for name in _slot_names(type(value)):
        try:
            parts.append(("slot", name, _slot(type(value), name).__get__(value, type(value))))
        except AttributeError:  # a slot left empty
            continue
    return parts


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
            first = len(leaves)
            laid = [[how, key, node(part)] for how, key, part in parts_of(value)]
            if any(not isinstance(leaf, PLAIN) for leaf in leaves[first:]):
                made["parts"] = [part for part in laid if part[2] != MADE]
            else:
                # No tensor in it: the value is the child's as made (a kernelbenchx test
                # run's seed stays in it).
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
    a dict, (how, key) for a made value's parts."""
    if "made" in node:
        return [((how, key), child) for how, key, child in node.get("parts", ())]
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
            return _written(twin, [(how, key, child) for (how, key), child in _children(node)], build)
        (kind, _), = node.items()
        built = [build(child, None if twin is None else twin[key]) for key, child in _children(node)]
        if kind == "dict":
            return {key: value for (key, _), value in zip(_children(node), built)}
        return built if kind == "list" else tuple(built)
    return [build(node, None if made is None else made[position]) for position, node in enumerate(tree)]


def _written(value, parts, build):
    """`value` (made in the child) with each part built over its own (build(node, own))
    written in as the task host read it: through the base types' own methods, the
    instance dictionary and the slots' descriptors, so that no method of its class runs
    (a frozen dataclass refuses __setattr__). A tuple, which cannot change, is made anew
    of its type (a namedtuple's fields)."""
    if isinstance(value, tuple) and any(how == "index" for how, _, _ in parts):
        items = list(tuple.__iter__(value))
        for how, key, child in parts:
            if how == "index":
                items[key] = build(child, items[key])
        fresh = tuple.__new__(type(value), items)
        if attributes_of(value) is not None:
            vars(fresh).update(vars(value))
        value = fresh
    for how, key, child in parts:
        if how == "item":
            dict.__setitem__(value, key, build(child, dict.__getitem__(value, key)))
        elif how == "index" and isinstance(value, list):
            list.__setitem__(value, key, build(child, list.__getitem__(value, key)))
        elif how == "attr":
            vars(value)[key] = build(child, vars(value).get(key))
        elif how == "slot":
            slot = _slot(type(value), key)
            slot.__set__(value, build(child, slot.__get__(value, type(value))))
    return value


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
            if "made" in node:
                how, key = key
                found = find(child, f"{path}.{key}" if how in ("attr", "slot") else f"{path}[{key!r}]")
            else:
                found = find(child, f"{path}[{key!r}]")
            if found is not None:
                return found
        return None
    for position, node in enumerate(tree):
        found = find(node, f"input #{position}")
        if found is not None:
            return found
    return f"input leaf #{leaf}"
