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

from kforge_harness.handover.values import value_from_json, value_to_json

PLAIN = (bool, int, float, str, type(None))
_CONTAINERS = {list: "list", tuple: "tuple", dict: "dict"}
MADE = {"made": None}
# A list or tuple of more plain values than this is made by the child from the seed, not
# carried inline: a timed call's preparation carries its inline values, decodes them and
# puts the call's arguments together, all in Python (20000 floats: 36 ms a call on a
# 2-core VM, whose load swings the preparations of two loops apart by more than the
# timing's allowance). Numbers in a list hold nothing a forward could change.
MAX_INLINE_VALUES = 1024


class Flat:
    """Inputs as flat leaves: `leaves` (tensors, NumPy arrays and scalars, plain values)
    in depth-first order, `tree` (the skeleton; None where every input is a leaf
    itself, the common case, whose layout is as it always was) and `unchecked` (whether
    a value made in the child may hold what no layout describes)."""

    def __init__(self, leaves, tree, unchecked):
        self.leaves, self.tree, self.unchecked = leaves, tree, unchecked


def _crosses(value):
    """Whether a plain value reaches the child as it is: text the wire would mend (a lone
    surrogate, protocol.encode) does not."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return False
    return True


def _key(value):
    """Whether a dict key can be laid out: a plain value that crosses and finds its item
    again (a NaN is equal to no other NaN)."""
    return isinstance(value, PLAIN) and _crosses(value) and value == value


def _is_leaf(value):
    if isinstance(value, PLAIN):
        return _crosses(value)
    return isinstance(value, (torch.Tensor, np.ndarray, np.generic))


# NumPy 2 moved it to np.lib.array_utils (np.byte_bounds raises there: every NumPy task
# on the GPU host was a harness_error); Debian's NumPy 1.24 has only np.byte_bounds.
_byte_bounds = getattr(np, "byte_bounds", None) or np.lib.array_utils.byte_bounds


def _memory(value):
    """(device, first byte, end) of the storage a tensor or array leaf lies in, or None."""
    if isinstance(value, np.ndarray):
        low, high = _byte_bounds(value)
        return "cpu", low, high
    if not isinstance(value, torch.Tensor):
        return None
    try:
        storage = value.untyped_storage()
    except AttributeError:  # torch < 2.0
        storage = value.storage()
    start = storage.data_ptr()
    return str(value.device), start, start + storage.nbytes()


def _sharing(leaves):
    """The ids of the distinct tensor leaves whose memory overlaps another's: the slot
    would hold them apart, and a forward may read through one what it writes through the
    other."""
    spans = []
    for leaf in leaves:
        try:
            memory = _memory(leaf)
        except (TypeError, RuntimeError, ValueError):
            memory = None
        if memory is not None and memory[2] > memory[1]:
            spans.append((memory, id(leaf)))
    spans.sort(key=lambda item: (item[0][0], item[0][1]))
    shared = set()
    for (first, first_id), (second, second_id) in zip(spans, spans[1:]):
        if first[0] == second[0] and second[1] < first[2]:
            shared.update((first_id, second_id))
    return shared


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
        if all(_key(key) for key in dict.keys(value)):
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
    """The Flat of a forward's inputs, or None when nothing in them can cross by buffer.
    A tensor given twice is one leaf, at both places (an alias kept); tensors that share
    memory otherwise (a view of another) are made in the child, where they alias as the
    task made them."""
    flat = _flatten(inputs, set())
    shared = set() if flat is None else _sharing(flat.leaves)
    return _flatten(inputs, shared) if shared else flat


def _flatten(inputs, shared):
    flattener = _Flattener(shared)
    tree = [flattener.node(value) for value in inputs]
    leaves = flattener.leaves
    if inputs and not leaves:
        return None
    if tree == list(range(len(leaves))):
        tree = None
    return Flat(leaves, tree, flattener.unchecked)


class _Flattener:
    """The walk of _flatten. A class, not a closure that calls itself: such a closure is
    a reference cycle (the function, the cell that names it), which keeps what it
    captured (the leaves: a call's inputs) until the collector runs, and a task host
    making 8 GiB of inputs a timed call ran out of device memory at 104 GiB so (KernelBench
    level 1's matrix-vector task on an H200)."""

    def __init__(self, shared):
        self.shared = shared
        self.leaves = []
        self.placed = {}  # id of a tensor leaf -> its index: the same tensor again is the same leaf
        self.inside = set()  # ids of the objects being laid out: a cycle is left to the child
        self.unchecked = False

    def node(self, value):
        leaves = self.leaves
        if _is_leaf(value):
            if isinstance(value, PLAIN):
                leaves.append(value)
                return len(leaves) - 1
            if id(value) in self.shared:
                self.unchecked = True
                return dict(MADE)
            if id(value) not in self.placed:
                leaves.append(value)
                self.placed[id(value)] = len(leaves) - 1
            return self.placed[id(value)]
        if id(value) in self.inside:
            # A container that holds itself: the reach back in is the child's own (made
            # from the seed), and what lies behind it is unchecked.
            self.unchecked = True
            return dict(MADE)
        # Exactly these types: a subclass (a namedtuple, an OrderedDict) would come back
        # as its base, which a forward may tell apart.
        kind = _CONTAINERS.get(type(value))
        self.inside.add(id(value))
        try:
            if kind == "dict" and all(_key(key) for key in value):
                return {kind: [[value_to_json(key), self.node(item)] for key, item in value.items()]}
            if kind in ("list", "tuple"):
                if len(value) > MAX_INLINE_VALUES and all(isinstance(item, PLAIN) for item in value):
                    return dict(MADE)
                return {kind: [self.node(item) for item in value]}
            made = dict(MADE)
            first = len(leaves)
            laid = [[how, value_to_json(key), self.node(part)] for how, key, part in parts_of(value)]
            if any(not isinstance(leaf, PLAIN) for leaf in leaves[first:]):
                made["parts"] = [part for part in laid if part[2] != MADE]
                if _held_in_parts(value) and all(_whole(part[2]) for part in laid):
                    made["whole"] = True
            else:
                # No tensor in it: the value is the child's as made (a kernelbenchx test
                # run's seed stays in it).
                del leaves[first:]
            self.unchecked = self.unchecked or not made.get("whole")
            return made
        finally:
            self.inside.discard(id(value))


_HEAPTYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class made by a class statement


def _held_in_parts(value):
    """Whether all a value holds is in its parts (parts_of): an instance of a class
    defined in Python over object, list, tuple or dict, whose state no C code keeps."""
    cls = type(value)
    if not cls.__flags__ & _HEAPTYPE:
        return False
    base = next(klass for klass in cls.__mro__ if not klass.__flags__ & _HEAPTYPE)
    return base in (object, list, tuple, dict)


def _whole(node):
    """Whether a node is laid out whole: leaves, containers of them, and made values
    whose every part is laid out ("whole")."""
    if isinstance(node, int):
        return True
    if "made" in node:
        return bool(node.get("whole"))
    return all(_whole(child) for _, child in _children(node))


def _children(node):
    """(key, child) of a node that holds others: positions for a list or tuple, keys for
    a dict, (how, key) for a made value's parts."""
    if "made" in node:
        return [((how, value_from_json(key)), child) for how, key, child in node.get("parts", ())]
    (kind, items), = node.items()
    if kind == "dict":
        return [(value_from_json(item[0]), item[1]) for item in items]
    return list(enumerate(items))


def _any(tree, wanted):
    return tree is not None and any(_has(node, wanted) for node in tree)


def _has(node, wanted):
    return not isinstance(node, int) and (wanted(node) or any(_has(child, wanted) for _, child in _children(node)))


def makes(tree):
    """Whether the child must make the call's inputs from its seed: a made value that is
    not laid out whole holds what only that seed gives."""
    return _any(tree, lambda node: "made" in node and not node.get("whole"))


def makes_any(tree):
    """Whether the child makes values at all (whole ones: from any seed, ahead of the
    call, their parts then written over)."""
    return _any(tree, lambda node: "made" in node)


def rebuild(tree, leaves, made=None):
    """The inputs a forward is given: `leaves` (views of the slot, inline values) put
    back in the skeleton, in new containers every time (a forward that changes a list it
    was given changes only its own); a "made" node's value taken from `made`, the same
    call's inputs made from its seed (makes())."""
    return [_build(node, None if made is None else made[position], leaves)
            for position, node in enumerate(tree)]


def _build(node, twin, leaves):
    """rebuild's walk (a module function: a closure that calls itself is a reference
    cycle, which keeps the call's inputs alive until the collector runs)."""
    if isinstance(node, int):
        return leaves[node]
    if "made" in node:
        if twin is None:
            raise ValueError("the inputs' layout needs values made from the seed, and none were made")
        return _written(twin, [(how, key, child) for (how, key), child in _children(node)],
                        lambda child, own: _build(child, own, leaves))
    (kind, items), = node.items()
    if kind != "dict" and set(map(type, items)) <= {int}:
        # Leaves only (a list of numbers): no walk (a call's numbers are put back
        # inside its bracket, where the harness's own work is kept short).
        built = [leaves[child] for child in items]
        return built if kind == "list" else tuple(built)
    built = [_build(child, None if twin is None else twin[key], leaves) for key, child in _children(node)]
    if kind == "dict":
        return {key: value for (key, _), value in zip(_children(node), built)}
    return built if kind == "list" else tuple(built)


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


def where(tree, leaf):
    """The place of flat leaf `leaf` among the inputs, as a user reads it: "input #1",
    or "input #1[0]['scale']" inside a container."""
    if tree is None:
        return f"input #{leaf}"
    for position, node in enumerate(tree):
        found = _find(node, f"input #{position}", leaf)
        if found is not None:
            return found
    return f"input leaf #{leaf}"


def _find(node, path, leaf):
    if isinstance(node, int):
        return path if node == leaf else None
    for key, child in _children(node):
        if "made" in node:
            how, key = key
            found = _find(child, f"{path}.{key}" if how in ("attr", "slot") else f"{path}[{key!r}]", leaf)
        else:
            found = _find(child, f"{path}[{key!r}]", leaf)
        if found is not None:
            return found
    return None
