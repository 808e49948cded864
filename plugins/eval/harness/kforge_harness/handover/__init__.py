"""Buffers the trusted side owns and lends to a sandboxed child by file descriptor, and
the layouts that say what lies in them.

A candidate's inputs and outputs cross between processes through these buffers, never
through files: the task host (reference/host.py, trusted) allocates them, fills the
inputs and reads the outputs; the candidate's child maps the same memory and runs on it.
On a CUDA device the memory stays on the device (cuda.py: memory of the driver's virtual
memory API, exported as a POSIX file descriptor, which crosses PID and IPC namespaces
where CUDA's legacy IPC handles cannot); elsewhere, or where the driver cannot export,
it is host memory (host.py: a sealed memfd). Which one a job got is its `handover` fact.

What a buffer holds is a Layout: leaves (tensors at aligned offsets, or inline values)
that both sides turn into views of the same bytes. The owner decides the layout; the
child cannot change what the owner reads, only the bytes, and the owner copies them
before it compares (judge.compare's chunks)."""

import dataclasses

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

    def to_json(self):
        if self.kind == "value":
            return {"kind": "value", "value": self.value}
        return {"kind": "tensor", "dtype": self.dtype, "shape": list(self.shape),
                "offset": self.offset, "nbytes": self.nbytes, "array": self.array}

    @staticmethod
    def from_json(data):
        if data.get("kind") == "value":
            return Leaf("value", value=data.get("value"))
        return Leaf("tensor", dtype=data["dtype"], shape=tuple(int(x) for x in data["shape"]),
                    offset=int(data["offset"]), nbytes=int(data["nbytes"]),
                    array=bool(data.get("array")))


def aligned(nbytes):
    return (nbytes + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT


class Layout:
    """Leaves packed one after the other at aligned offsets."""

    def __init__(self, leaves=()):
        self.leaves = list(leaves)

    @property
    def nbytes(self):
        ends = [leaf.offset + leaf.nbytes for leaf in self.leaves if leaf.kind == "tensor"]
        return aligned(max(ends, default=0))

    def to_json(self):
        return [leaf.to_json() for leaf in self.leaves]

    @staticmethod
    def from_json(data):
        return Layout(Leaf.from_json(item) for item in data)

    @staticmethod
    def pack(described):
        """A layout for `described`: (kind, dtype, shape, nbytes, value, array) tuples in
        order (outputs.describe's facts), tensors at aligned offsets."""
        leaves, offset = [], 0
        for kind, dtype, shape, nbytes, value, array in described:
            if kind != "tensor":
                leaves.append(Leaf("value", value=value))
                continue
            leaves.append(Leaf("tensor", dtype, tuple(shape), offset, nbytes, array=array))
            offset += aligned(nbytes)
        return Layout(leaves)
