"""A kernelbenchx task's timed unit: the calls of the task's function that one run of its
test code makes, recorded by the task host (trusted) with the reference function and
handed over to the candidate's process the way a KernelBench task's inputs are.

The task host runs the test code on the timed call's seed (drawn for that call, secret,
never repeated) and records every call of the function: its positional and keyword
arguments, copied before the call ran (the test may change them in place later), and the
layout of what the reference returned. Tensor and NumPy arguments go into the input slot
the host lends, with their strides (a transposed or expanded tensor stays one; one
tensor passed twice to a call is one tensor there too); numbers, strings, None, dtypes,
devices, torch.Size and lists, tuples and dicts of them travel as a tape of nodes
(`Unit.describe`). The child rebuilds the calls over the slot (`LentUnit`) and replays
them in order as one timed unit; what they return goes into the output slot. The host
judges a unit as it judges a KernelBench timed call (reference/host.py): no poison left,
the results' names and inline values every time, and on a unit that is checked (drawn,
or whose outputs repeat an earlier one's) the reference function over fresh copies of
the same arguments (`Unit.arguments`): its results against the candidate's, each
argument it leaves unchanged unchanged, each one it changes in place compared as a
result.

Left out of the unit (never timed), each with its reason (`Unit.left_out`):
- a call whose arguments are the same at every seed (byte for byte at two seeds: the
  test's fixed cases). They are written in the task file: a candidate could return
  results stored for them, correct and free, and no check could tell;
- a call whose arguments repeat an earlier call's of the same run (timed once);
- a call whose arguments or result cannot cross (`CannotCross` says which: a function, a
  generator, a module, a tensor subclass, a sparse tensor, another device's tensor...).
A test run none of whose calls is left is not timed at all."""

import hashlib
import json
import math

import numpy as np
import torch

from kforge_harness import handover
from kforge_harness.judge.outputs import digest, dtype_name, torch_dtype

# Bounds of one unit: values in its calls' arguments (nodes), tensors among them and
# among their results (the judge takes as many leaves as a test's results, kbx.MAX_LEAVES).
MAX_NODES = 1 << 16
MAX_LEAVES = 4096
MAX_TEXT = 1 << 16

SAME_AT_EVERY_SEED = ("arguments the same at every seed (the test's fixed cases: a candidate "
                      "could return results stored for them, and no check could tell)")
REPEATED = "arguments that repeat an earlier call's of the same run (that call is timed)"
UNIT_FULL = (f"the unit holds {MAX_LEAVES} tensors or {MAX_NODES} argument values already "
             "without it")

# What the judge's messages call a unit's results.
RESULTS_WHAT = "the timed calls' results"

_TORCH_CONSTANTS = (torch.dtype, torch.layout, torch.memory_format)


class CannotCross(Exception):
    """A value that cannot be handed over between processes: the text says where it is
    and what it is."""


def type_name(value):
    kind = type(value)
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


def held_strides(tensor):
    """The strides a tensor keeps when it crosses: its own where its elements, expanded
    (stride-0) dimensions aside, do not overlap and it is not contiguous; None (packed
    contiguous) otherwise."""
    if tensor.is_contiguous():
        return None
    reach = 0
    for stride, size in sorted((stride, size) for size, stride in zip(tensor.shape, tensor.stride())
                               if size > 1 and stride > 0):
        if stride <= reach:
            return None
        reach += (size - 1) * stride
    return tuple(tensor.stride())


def strided_copy(tensor, strides):
    """A copy of `tensor` with `strides` (held_strides'), on its device."""
    if strides is None:
        return tensor.clone(memory_format=torch.contiguous_format)
    copy = torch.empty_strided(tuple(tensor.shape), strides, dtype=tensor.dtype, device=tensor.device)
    handover.fill(copy, tensor)
    return copy


class Call:
    """One call of the function in a run of the test code, as the task host recorded it
    with the reference function."""

    def __init__(self, index):
        self.index = index  # its place among the run's calls of the function
        self.nodes = []  # its arguments' tape (JSON); the last node is the call itself
        self.leaves = []  # per tensor argument: its handover.Leaf (the unit places it)
        self.copies = []  # per tensor argument: its value before the call ran
        self.where = []  # per tensor argument: what it is, for messages
        self.results = None  # what the reference returned: (names, [(dtype, shape, nbytes)], values)
        self.reason = None  # why it cannot be handed over, else None
        self.key = None  # a digest of everything it is given

    def returned(self, flattened):
        """Takes kbx.flatten(..., strict=True) of what the reference returned, or the
        CannotCross it raised."""
        if self.reason is not None:
            return
        if isinstance(flattened, CannotCross):
            self.reason = f"what it returns cannot be handed over: {flattened}"
            return
        names, tensors, values = flattened
        described = []
        for name, tensor in zip([n for n in names if n not in values], tensors):
            if torch_dtype(dtype_name(tensor.dtype)) is None:
                self.reason = f"its result {name} is of {dtype_name(tensor.dtype)}, which no buffer carries"
                return
            described.append((dtype_name(tensor.dtype), tuple(tensor.shape),
                              tensor.numel() * tensor.element_size()))
        self.results = (names, described, values)


def capture(index, args, kwargs, device):
    """Call `index` with its arguments copied as they are now (before it runs); `device`:
    the task's torch device. A call that cannot be handed over gets its `reason`."""
    call = Call(index)
    try:
        _Tape(call, device).record(args, kwargs)
    except CannotCross as exc:
        call.reason = str(exc)
        call.nodes, call.leaves, call.copies, call.where = [], [], [], []
        return call
    key = hashlib.sha256(json.dumps(call.nodes).encode())
    for leaf, copy in zip(call.leaves, call.copies):
        key.update(json.dumps([leaf.dtype, list(leaf.shape), leaf.strides, leaf.array]).encode())
        key.update(digest(copy).encode())
    call.key = key.hexdigest()
    return call


class _Tape:
    """Writes one call's arguments as nodes, children before their parent: ["tensor", k,
    placement ("task" or "cpu"), requires_grad], ["value", JSON scalar], ["float",
    repr] (not finite), ["complex", repr, repr], ["numpy", dtype, node], ["torch", name]
    (a dtype, layout or memory format), ["device", placement], ["size", ints], ["list" or
    "tuple", nodes], ["dict", [[key node, value node], ...]], and last ["call",
    positional nodes, [[name, node], ...], grad mode] (the replay reproduces a call made
    under torch.no_grad; one made under autocast or inference mode cannot cross)."""

    def __init__(self, call, device):
        self.call = call
        self.device = device
        self.leaf_of = {}  # id(tensor or array) -> its leaf: passed twice, one tensor

    def record(self, args, kwargs):
        if torch.is_autocast_enabled() or torch.is_autocast_cpu_enabled():
            raise CannotCross("it runs under autocast, which the replay does not reproduce")
        if torch.is_inference_mode_enabled():
            raise CannotCross("it runs in inference mode, which the replay does not reproduce")
        positional = [self.value(arg, f"argument #{i}") for i, arg in enumerate(args)]
        keywords = [[name, self.value(arg, f"argument {name}")] for name, arg in kwargs.items()]
        self.add(["call", positional, keywords, torch.is_grad_enabled()])

    def add(self, node):
        if len(self.call.nodes) >= MAX_NODES:
            raise CannotCross(f"its arguments hold more than {MAX_NODES} values")
        self.call.nodes.append(node)
        return len(self.call.nodes) - 1

    def value(self, value, where):
        kind = type(value)
        if kind in (torch.Tensor, torch.nn.Parameter):
            placement = self.placement(value.device, where)
            return self.add(["tensor", self.tensor(value, where), placement, bool(value.requires_grad)])
        if kind is np.ndarray:
            return self.add(["tensor", self.array(value, where), "cpu", False])
        if value is None or kind in (bool, int):
            return self.add(["value", value])
        if kind is str:
            if len(value) > MAX_TEXT:
                raise CannotCross(f"{where} is a string of more than {MAX_TEXT} characters")
            return self.add(["value", value])
        if kind is float:
            return self.add(["value", value] if math.isfinite(value) else ["float", repr(value)])
        if kind is complex:
            return self.add(["complex", repr(value.real), repr(value.imag)])
        if isinstance(value, np.generic) and kind.__module__ == "numpy" and value.dtype.kind in "biufc":
            return self.add(["numpy", value.dtype.str, self.value(value.item(), where)])
        if kind in _TORCH_CONSTANTS:
            return self.add(["torch", str(value).split(".", 1)[1]])
        if kind is torch.device:
            return self.add(["device", self.placement(value, where)])
        if kind is torch.Size:
            return self.add(["size", [int(size) for size in value]])
        if kind in (list, tuple):
            return self.add([kind.__name__, [self.value(item, f"{where}[{i}]") for i, item in enumerate(value)]])
        if kind is dict:
            pairs = []
            for key, item in value.items():
                if key is not None and type(key) not in (bool, int, float, str):
                    raise CannotCross(f"{where} has a key that is a {type_name(key)}")
                pairs.append([self.value(key, where), self.value(item, f"{where}[{key!r}]")])
            return self.add(["dict", pairs])
        raise CannotCross(f"{where} is a {type_name(value)}")

    def placement(self, device, where):
        if device.type == "cpu":
            return "cpu"
        if device == self.device:
            return "task"
        raise CannotCross(f"{where} is on {device}, which the candidate's process does not see")

    def tensor(self, tensor, where):
        known = self.leaf_of.get(id(tensor))
        if known is not None:
            return known
        if tensor.layout != torch.strided or tensor.is_quantized:
            raise CannotCross(f"{where} is a {tensor.layout} tensor" if tensor.layout != torch.strided
                              else f"{where} is a quantized tensor")
        value = tensor.detach().resolve_conj().resolve_neg()
        strides = held_strides(value)
        elements = value.numel() if strides is None else handover.span(tuple(value.shape), strides)
        return self.leaf(tensor, value, strides, elements, False, where)

    def array(self, array, where):
        known = self.leaf_of.get(id(array))
        if known is not None:
            return known
        try:
            value = torch.from_numpy(np.array(array, copy=True, order="C"))
        except TypeError:
            raise CannotCross(f"{where} is a NumPy array of {array.dtype}") from None
        return self.leaf(array, value, None, value.numel(), True, where)

    def leaf(self, original, value, strides, elements, array, where):
        name = dtype_name(value.dtype)
        if torch_dtype(name) is None:
            raise CannotCross(f"{where} is of {name}, which no buffer carries")
        call = self.call
        call.leaves.append(handover.Leaf("tensor", name, tuple(value.shape),
                                         nbytes=elements * value.element_size(), array=array,
                                         strides=strides))
        call.copies.append(value if array else strided_copy(value, strides))
        call.where.append(f"call #{call.index}'s {where}")
        self.leaf_of[id(original)] = len(call.leaves) - 1
        return len(call.leaves) - 1


def decode(nodes, leaf, device):
    """The (args, kwargs, grad mode) of a call from its tape (_Tape); leaf(k, placement,
    requires_grad) gives its tensor argument k; `device`: the task's torch device here."""
    built = []
    for node in nodes:
        kind = node[0]
        if kind == "tensor":
            value = leaf(int(node[1]), node[2], bool(node[3]))
        elif kind == "value":
            value = node[1]
        elif kind == "float":
            value = float(node[1])
        elif kind == "complex":
            value = complex(float(node[1]), float(node[2]))
        elif kind == "numpy":
            value = np.dtype(node[1]).type(built[node[2]])
        elif kind == "torch":
            value = getattr(torch, node[1])
            if not isinstance(value, _TORCH_CONSTANTS):
                raise ValueError(f"torch.{node[1]} is no dtype, layout or memory format")
        elif kind == "device":
            value = torch.device("cpu") if node[1] == "cpu" else device
        elif kind == "size":
            value = torch.Size(node[1])
        elif kind == "list":
            value = [built[i] for i in node[1]]
        elif kind == "tuple":
            value = tuple(built[i] for i in node[1])
        elif kind == "dict":
            value = {built[k]: built[v] for k, v in node[1]}
        elif kind == "call":
            value = ([built[i] for i in node[1]], {name: built[i] for name, i in node[2]}, bool(node[3]))
        else:
            raise ValueError(f"an argument node of kind {kind!r}")
        built.append(value)
    return built[-1]


class Unit:
    """The timed unit of one run of the test code (the task host's): the calls handed
    over, in order, and those left out with their reasons. `fixed`: the keys of calls
    whose arguments are the same at every seed."""

    def __init__(self, calls, fixed):
        self.calls, self.left_out = [], []
        seen = set()
        leaves = results = nodes = 0
        for call in calls:
            reason = call.reason
            if reason is None and call.key in fixed:
                reason = SAME_AT_EVERY_SEED
            elif reason is None and call.key in seen:
                reason = REPEATED
            elif reason is None and (leaves + len(call.leaves) > MAX_LEAVES or nodes + len(call.nodes) > MAX_NODES
                                     or results + len(call.results[0]) > MAX_LEAVES):
                reason = UNIT_FULL
            if reason is not None:
                self.left_out.append((call.index, reason))
                continue
            seen.add(call.key)
            self.calls.append(call)
            leaves, nodes, results = leaves + len(call.leaves), nodes + len(call.nodes), results + len(call.results[0])
        self.layout = handover.Layout.pack_leaves([leaf for call in self.calls for leaf in call.leaves])
        first = 0
        for call in self.calls:
            for node in call.nodes:
                if node[0] == "tensor" and node[2] == "cpu":
                    self.layout.leaves[first + node[1]].host = True
            first += len(call.leaves)
        self.copies = [copy for call in self.calls for copy in call.copies]
        self.where = [where for call in self.calls for where in call.where]
        self.names, self.values, described = [], {}, []
        for call in self.calls:
            names, tensors, values = call.results
            self.names += names
            self.values.update(values)
            described += tensors
        self.output_layout = handover.Layout.pack(
            ("tensor", dtype, shape, nbytes, None, False) for dtype, shape, nbytes in described)

    def describe(self):
        """What the child rebuilds the calls from (LentUnit)."""
        calls, first = [], 0
        for call in self.calls:
            calls.append({"index": call.index, "nodes": call.nodes, "first": first})
            first += len(call.leaves)
        return {"layout": self.layout.to_json(), "calls": calls}

    def facts(self):
        """The results' names and inline values, as a child reports its own (kbx.leaf_mismatch)."""
        return {"names": self.names, "values": self.values}

    def arguments(self, device):
        """The calls as the reference is given them to check a unit (Arguments): fresh
        copies of what was handed over, with the same values, strides, devices and
        requires_grad."""
        return Arguments(self, device)


class Arguments:
    """A unit's calls over fresh copies of its arguments (the task host's): `calls` and
    `indices` as LentUnit's, and `values()`, the tensor arguments as they are now (to
    see which ones the calls changed)."""

    def __init__(self, unit, device):
        self.made = {}

        def leaf(k, placement, grad):
            if k not in self.made:
                copy = strided_copy(unit.copies[k], unit.layout.leaves[k].strides)
                self.made[k] = copy.numpy() if unit.layout.leaves[k].array else copy.requires_grad_(grad)
            return self.made[k]

        self.calls, self.indices, first = [], [], 0
        for call in unit.calls:
            self.calls.append(decode(call.nodes, lambda k, p, g, first=first: leaf(first + k, p, g), device))
            self.indices.append(call.index)
            first += len(call.leaves)

    def values(self):
        return [torch.from_numpy(value) if isinstance(value, np.ndarray) else value.detach()
                for _, value in sorted(self.made.items())]


class LentUnit:
    """The child's side of a unit: its calls rebuilt over the views of the input slot the
    task host filled, a CPU argument's over the slot's host-memory twin where the task
    host lends one (on an accelerator: handover.Leaf.host). An argument the call takes
    where its view is not (a CPU tensor of a GPU task without the twin) is a copy, filled
    from the slot (`fill`) and written back into it after the unit (`write_back`), so that
    the host sees what the calls did to their arguments: the child's own work in the
    call's bracket, which a loop of the candidate's could leave out, and which the twin
    makes unneeded."""

    def __init__(self, views, layout, calls, device):
        """`views`: the slot's views of `layout` (handover.views, arrays=False); `calls`:
        the description's calls (Unit.describe)."""
        self.copied = []  # (the slot's view, the copy the calls were given)
        made = {}

        def leaf(k, placement, grad):
            if k in made:
                return made[k]
            view, array = views[k], layout.leaves[k].array
            wanted = torch.device("cpu") if placement == "cpu" else device
            value = view
            if view.device != wanted:
                value = torch.empty_like(view, device=wanted)
                self.copied.append((view, value))
            if array:
                value = value.numpy()
            elif grad:
                value = value.detach().requires_grad_(True) if value is view else value.requires_grad_(True)
            made[k] = value
            return value

        self.calls, self.indices = [], []
        for call in calls:
            first = int(call["first"])
            self.calls.append(decode(call["nodes"], lambda k, p, g, first=first: leaf(first + k, p, g), device))
            self.indices.append(int(call["index"]))

    def fill(self, copy):
        """The copies filled from the slot, with `copy` (the clock's bound copy)."""
        with torch.no_grad():
            for view, value in self.copied:
                copy(value, view)

    def write_back(self, copy):
        """The copies' values back into the slot, with `copy` (the clock's bound copy)."""
        with torch.no_grad():
            for view, value in self.copied:
                copy(view, value.detach())


def left_out_text(left_out):
    """Unit.left_out as text, calls grouped by reason: "call #0, #1: <reason>; call #4: ..."."""
    grouped = {}
    for index, reason in left_out:
        grouped.setdefault(reason, []).append(f"#{index}")
    return "; ".join(f"call {', '.join(indices)}: {reason}" for reason, indices in grouped.items())
