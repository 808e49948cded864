"""Buffers the trusted side owns and lends to a sandboxed child by file descriptor, and
the layouts that say what lies in them.

A candidate's inputs and outputs cross between processes through these buffers, never
through files: the task host (reference/host.py, trusted) allocates them, fills the
inputs and reads the outputs; the candidate's child maps the same memory and runs on it.
On a CUDA device the memory stays on the device (cuda.py: memory of the driver's virtual
memory API, exported as a POSIX file descriptor, which crosses PID and IPC namespaces
where CUDA's legacy IPC handles cannot); elsewhere, or where the driver cannot export,
it is host memory (host.py: a sealed memfd). Which one a job got is its `handover` fact.
On CUDA the child also gets an arena (arena.py): device memory its caching allocator
takes its segments from, so that a timed call's outputs lie where the task host reads
them and nobody in the child copies them.

What a buffer holds is a Layout: leaves (tensors at aligned offsets, or inline values)
that both sides turn into views of the same bytes; a tensor leaf may keep the strides of
the value it carries (a kernelbenchx call's argument: a transposed or expanded tensor
stays one). The owner decides the layout; the
child cannot change what the owner reads, only the bytes, and the owner copies them
before it compares (judge.compare's chunks)."""

import dataclasses

from kforge_harness.handover.values import value_from_json, value_to_json

# Offsets of leaves inside a buffer: kernels may assume the alignment torch's allocator
# gives (512 bytes on CUDA).
ALIGNMENT = 512

HOST = "host"
DEVICE = "device"


@dataclasses.dataclass
class Leaf:
    """One element of a layout: a tensor `dtype`/`shape` at `offset` (bytes), or an
    inline value (`value`, JSON) for an element that is not a tensor."""
    kind: str  # "tensor" or "value"
    dtype: str = ""
    shape: tuple = ()
    offset: int = 0
    nbytes: int = 0
    value: object = None
    array: bool = False  # a NumPy array on the reference's side (a numpy task)
    name: str = ""  # what the leaf is (a weight's name), where it matters
    # Element strides over the leaf's bytes (stride 0: an expanded dimension, one element
    # held); None: contiguous.
    strides: tuple = None
    # Lies in the slot's host-memory twin, where one is lent (a kernelbenchx call's CPU
    # argument on an accelerator: the child uses it where it lies, no copy of its own).
    host: bool = False

    def to_json(self):
        if self.kind == "value":
            return {"kind": "value", "value": value_to_json(self.value)}
        data = {"kind": "tensor", "dtype": self.dtype, "shape": list(self.shape),
                "offset": self.offset, "nbytes": self.nbytes, "array": self.array,
                "name": self.name}
        if self.strides is not None:
            data["strides"] = list(self.strides)
        if self.host:
            data["host"] = True
        return data

    @staticmethod
    def from_json(data):
        if data.get("kind") == "value":
            return Leaf("value", value=value_from_json(data.get("value")))
        strides = data.get("strides")
        return Leaf("tensor", dtype=data["dtype"], shape=tuple(int(x) for x in data["shape"]),
                    offset=int(data["offset"]), nbytes=int(data["nbytes"]),
                    array=bool(data.get("array")), name=str(data.get("name", "")),
                    strides=None if strides is None else tuple(int(x) for x in strides),
                    host=data.get("host") is True)


def aligned(nbytes):
    return (nbytes + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT


class Layout:
    """Leaves packed one after the other at aligned offsets; `tree`, where inputs nest in
    containers, the skeleton that puts the leaves back together (tree.py)."""

    def __init__(self, leaves=(), tree=None):
        self.leaves = list(leaves)
        self.tree = tree

    @property
    def nbytes(self):
        ends = [leaf.offset + leaf.nbytes for leaf in self.leaves if leaf.kind == "tensor"]
        return aligned(max(ends, default=0))

    def to_json(self):
        leaves = [leaf.to_json() for leaf in self.leaves]
        return leaves if self.tree is None else {"leaves": leaves, "tree": self.tree}

    @staticmethod
    def from_json(data):
        if isinstance(data, dict):
            return Layout((Leaf.from_json(item) for item in data["leaves"]), data["tree"])
        return Layout(Leaf.from_json(item) for item in data)

    @staticmethod
    def pack(described, tree=None):
        """A layout for `described`: (kind, dtype, shape, nbytes, value, array) tuples in
        order (outputs.describe's facts), tensors at aligned offsets."""
        return Layout.pack_leaves(
            (Leaf("tensor", dtype, tuple(shape), nbytes=nbytes, array=array) if kind == "tensor"
             else Leaf("value", value=value)
             for kind, dtype, shape, nbytes, value, array in described), tree)

    @staticmethod
    def pack_leaves(leaves, tree=None):
        """A layout of `leaves` in order, each tensor leaf given the next aligned offset."""
        leaves, offset = list(leaves), 0
        for leaf in leaves:
            if leaf.kind == "tensor":
                leaf.offset = offset
                offset += aligned(leaf.nbytes)
        return Layout(leaves, tree)


def span(shape, strides):
    """Elements a tensor of `shape` and element `strides` reaches from its first one."""
    if any(size == 0 for size in shape):
        return 0
    return 1 + sum((size - 1) * stride for size, stride in zip(shape, strides))


def fill(view, value):
    """view <- value, where `view` may be expanded (stride 0): an expanded dimension holds
    one element, which is all that is written of it (value's are equal along it)."""
    target, source = writable(view, value)
    target.copy_(source)


def writable(view, value):
    """(target, source): `view` and `value` narrowed to what fill() writes, for a copy
    made later (a timed call's inputs, published inside its bracket)."""
    for dim, (size, stride) in enumerate(zip(view.shape, view.stride())):
        if stride == 0 and size > 1:
            view, value = view.narrow(dim, 0, 1), value.narrow(dim, 0, 1)
    return view, value


_device_kind = {}


def kind_for(device):
    """DEVICE where this process can export device memory for `device` (a CUDA device
    whose driver has the virtual memory API with POSIX descriptors), else HOST. Found once
    per device, by exporting a small buffer."""
    if device.name not in _device_kind:
        kind = HOST
        if device.type == "cuda":
            try:
                import torch
                from kforge_harness.handover.cuda import DeviceMapping
                DeviceMapping.allocate(1, torch.device(device.name)).close()
                kind = DEVICE
            except (OSError, AttributeError) as exc:
                import sys
                print(f"kforge: device memory cannot be exported on {device.name} ({exc}); "
                      "outputs cross through host memory", file=sys.stderr)
        _device_kind[device.name] = kind
    return _device_kind[device.name]


def allocate(nbytes, device, kind):
    """A buffer of `nbytes` this process owns and can lend (`kind`: kind_for's)."""
    if kind == DEVICE:
        import torch
        from kforge_harness.handover.cuda import DeviceMapping
        return DeviceMapping.allocate(nbytes, torch.device(device.name))
    from kforge_harness.handover.host import HostMapping
    return HostMapping.allocate(nbytes)


def describe(mapping, role):
    """What the child needs besides the descriptor to map `mapping`."""
    return {"role": role, "kind": mapping.kind, "nbytes": mapping.nbytes,
            "size": getattr(mapping, "size", mapping.nbytes)}


def open_buffer(description, fd, torch_device):
    """The child's side of describe(): maps the received descriptor `fd` (owned by the
    returned mapping, or closed). `torch_device`: the device as the child names it."""
    nbytes = int(description["nbytes"])
    if description["kind"] == "doorbell":
        from kforge_harness.handover.doorbell import BellRope
        return BellRope(fd)
    if description["kind"] == DEVICE:
        from kforge_harness.handover.cuda import DeviceMapping
        return DeviceMapping.open(fd, nbytes, int(description["size"]), torch_device)
    from kforge_harness.handover.host import HostMapping
    try:
        return HostMapping.open(fd, nbytes)
    except BaseException:
        import os
        os.close(fd)
        raise


def views(mapping, layout, arrays=True, host=None):
    """The layout's leaves over the mapping's bytes (a `host` leaf's over `host`'s, the
    slot's host-memory twin, where there is one): tensors (NumPy arrays for `array`
    leaves on the host, where `arrays`) and inline values, in order."""
    from kforge_harness.judge.outputs import torch_dtype
    result = []
    for leaf in layout.leaves:
        if leaf.kind != "tensor":
            result.append(leaf.value)
            continue
        dtype = torch_dtype(leaf.dtype)
        where = host if leaf.host and host is not None else mapping
        if dtype is None or leaf.offset + leaf.nbytes > where.nbytes:
            raise ValueError(f"a layout leaf that does not fit its buffer ({leaf.to_json()})")
        view = where.raw[leaf.offset:leaf.offset + leaf.nbytes].view(dtype)
        if leaf.strides is None:
            view = view.view(leaf.shape)
        elif span(leaf.shape, leaf.strides) > view.numel():
            raise ValueError(f"a layout leaf whose strides reach beyond it ({leaf.to_json()})")
        else:
            view = view.as_strided(leaf.shape, leaf.strides)
        result.append(view.numpy() if arrays and leaf.array and view.device.type == "cpu" else view)
    return result
