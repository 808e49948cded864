"""Output leaves and their reading: a forward's outputs flattened into tensor leaves
(`flat_leaves`, `as_tensor`), read in flat chunks of a fixed number of elements
(`TensorLeaf`; `SnapshotLeaf` for a buffer another process can write), dtype names, and
digests of inputs. Outputs never cross processes as files: the task host reads the
candidate's outputs in the buffer it lent (handover/), on the device where they live."""

import math
import secrets
import threading

import numpy as np
import torch

# The dtypes an output leaf can have (the hand-over's buffers carry these): float8
# types where this torch has them.
_DTYPES = frozenset(["float64", "float32", "float16", "bfloat16", "complex64", "complex128",
                     "int64", "int32", "int16", "int8", "uint8", "bool"] +
                    [name for name in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
                                       "float8_e5m2fnuz") if hasattr(torch, name)])


def dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def torch_dtype(name):
    """The torch dtype of a name an output leaf can have, or None."""
    return getattr(torch, name) if name in _DTYPES else None


def flat_leaves(obj):
    """The outputs of a forward as a flat list (tuples/lists unpacked, in order). Their
    items are read through tuple's and list's own methods: a subclass (torch.max's
    structseq, a namedtuple) is unpacked as what it holds, and no method of its own runs:
    an __iter__ of the candidate's would run in the hand-over, after the call's clock."""
    if isinstance(obj, tuple):
        items = [tuple.__getitem__(obj, i) for i in range(tuple.__len__(obj))]
    elif isinstance(obj, list):
        items = [list.__getitem__(obj, i) for i in range(list.__len__(obj))]
    else:
        return [obj]
    return [leaf for item in items for leaf in flat_leaves(item)]


def as_tensor(value):
    """A forward's output leaf as a tensor (NumPy arrays and Python/NumPy scalars too),
    or None when it is something else."""
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, (np.ndarray, np.generic)):
        return torch.from_numpy(np.ascontiguousarray(value))
    if isinstance(value, (bool, int, float)):
        return torch.tensor(value)
    return None


def surely_finite(tensors):
    """True when every element of these floating tensors is finite, told by one sum of
    each: one read of the tensor, no temporary of its size, one wait for the device (on
    an H200, 1 ms for 4 GB of float32, where a NaN mask and its reduction took 1.8 and
    a float64 sum 6.5). A NaN or an infinity makes its sum so. False only means "look
    element by element": large finite values can overflow their sum (float32 and
    narrower types are summed in float32, float64 in float64)."""
    for tensor in tensors:
        values = tensor.resolve_conj().resolve_neg()  # a lazily conjugated view: its values
        values = torch.view_as_real(values) if values.is_complex() else values
        wide = torch.float64 if values.dtype == torch.float64 else torch.float32
        if values.numel() and not math.isfinite(float(values.sum(dtype=wide))):
            return False
    return True


def pieces(tensor, max_elements):
    """Consecutive pieces of `tensor` in row-major order, each contiguous and flat, of at
    most `max_elements` elements (a non-contiguous tensor is copied piece by piece, never
    whole). A lazily conjugated or negated view (`x.conj()` of a complex tensor) yields
    its values: NumPy and view_as_real refuse such views."""
    for piece in _raw_pieces(tensor, max_elements):
        yield piece.resolve_conj().resolve_neg()


def _raw_pieces(tensor, max_elements):
    if tensor.numel() == 0:
        return
    if tensor.is_contiguous():
        flat = tensor.reshape(-1)
        for start in range(0, flat.numel(), max_elements):
            yield flat[start:start + max_elements]
    elif tensor.numel() <= max_elements:
        yield tensor.contiguous().reshape(-1)
    elif tensor.dim() == 1:
        for start in range(0, tensor.numel(), max_elements):
            yield tensor[start:start + max_elements].contiguous()
    else:
        row = tensor.numel() // tensor.shape[0]
        if row <= max_elements:
            rows = max_elements // row
            for start in range(0, tensor.shape[0], rows):
                yield tensor[start:start + rows].contiguous().reshape(-1)
        else:
            for index in range(tensor.shape[0]):
                yield from _raw_pieces(tensor[index], max_elements)


class TensorLeaf:
    """An output leaf in memory, read in chunks: the task host's reference outputs (on its
    device), tests' values."""

    def __init__(self, tensor):
        self.tensor = tensor.detach()
        self.dtype = tensor.dtype
        self.shape = tuple(tensor.shape)
        self.numel = tensor.numel()
        self.nbytes = self.numel * tensor.element_size()
        self.device = tensor.device

    def _piece(self, flat, start, count):
        return flat[start:start + count]

    @property
    def sliceable(self):
        """Whether chunks() reads any slice [start, start + count) (a contiguous tensor),
        so that several threads can compare slices of it (compare_leaf)."""
        return self.tensor.is_contiguous()

    def chunks(self, elements, start=0, count=None):
        """Flat chunks of exactly `elements` elements (the last may be shorter), on the
        tensor's device, so two leaves of any layouts read in step:
        elements [start, start + count) of a contiguous tensor, else the whole."""
        count = self.numel - start if count is None else count
        if self.tensor.is_contiguous():
            flat = self.tensor.reshape(-1)
            for begin in range(start, start + count, elements):
                yield self._piece(flat, begin, min(elements, start + count - begin))
            return
        if start != 0 or count != self.numel:
            raise ValueError("a non-contiguous tensor leaf is read whole")
        held, count = [], 0
        for piece in pieces(self.tensor, elements):
            held.append(piece.clone())
            count += piece.numel()
            if count >= elements:
                joined = torch.cat(held)
                for begin in range(0, count - count % elements, elements):
                    yield joined[begin:begin + elements]
                rest = joined[count - count % elements:]
                held, count = ([rest], rest.numel()) if rest.numel() else ([], 0)
        if count:
            yield torch.cat(held)


class SnapshotLeaf(TensorLeaf):
    """A tensor in memory another process can write (a buffer lent to a candidate's
    child): each chunk is copied before it is compared, so every element is read once and
    the statistics of a chunk all describe the same bytes, whatever the child writes
    meanwhile. One copy buffer per thread that reads it (compare_leaf's slices)."""

    def __init__(self, tensor):
        super().__init__(tensor)
        self._buffers = threading.local()

    def _piece(self, flat, start, count):
        buffer = getattr(self._buffers, "buffer", None)
        if buffer is None or buffer.numel() < count:
            buffer = self._buffers.buffer = torch.empty(count, dtype=self.dtype, device=self.device)
        copy = buffer[:count]
        copy.copy_(flat[start:start + count])
        return copy


# A digest reads a tensor in pieces of at most this many int64 lanes (its 8-byte words,
# or its elements widened where its bytes are not whole aligned words). On the CPU the
# pieces' buffers stay in cache; on a device, large pieces mean few launches from Python
# (4M-element pieces made a 4 GB input's digest 27 ms on an H200, mostly launches).
DIGEST_LANES = {"cpu": 1 << 20}
DEVICE_DIGEST_LANES = 1 << 23

# Per device, this process's secret weights of the digest's weighted sum (drawn at its
# first digest there: in a task host, never in the zygote whose memory candidates
# inherit). With public weights a forward could change its inputs in a way that keeps
# both of a piece's sums.
_weights = {}


def _digest_weights(device, lanes):
    if device not in _weights:
        generator = torch.Generator().manual_seed(secrets.randbelow(1 << 62))
        drawn = torch.randint(-(1 << 62), 1 << 62, (lanes,), generator=generator, dtype=torch.int64)
        _weights[device] = (drawn.to(device), torch.empty(lanes, dtype=torch.int64, device=device))
    return _weights[device]


def digest(value):
    """A checksum of a forward's input (tensors by their bytes, plain values by repr) that
    changes when anything in it changes: enough to tell whether a forward wrote into its
    inputs without keeping a pristine copy of them. Computed where the value lives (on
    the device), in pieces: per piece the sum of its lanes and their sum weighted by
    this process's secret weights (mod 2**64), the pieces chained in order."""
    if isinstance(value, np.ndarray):
        value = torch.from_numpy(value)
    if not isinstance(value, torch.Tensor):
        return repr(value) if isinstance(value, (bool, int, float, str, type(None))) else type(value).__name__
    value = value.detach()
    limit = DIGEST_LANES.get(value.device.type, DEVICE_DIGEST_LANES)
    weights, weighted = _digest_weights(value.device, limit)
    element = value.element_size()
    as_words = value.numel() * element % 8 == 0
    # Each piece's two sums stay on the device until the last piece is done: one wait for
    # the device per digest, not two per piece.
    sums, sizes = [], []
    for piece in pieces(value, limit * 8 // element if as_words else limit):
        lanes = _integer_view(piece)
        if as_words:
            if lanes.data_ptr() % 8:  # a view that starts off a word boundary: its bytes copied
                lanes = lanes.clone()
            lanes = lanes.view(torch.uint8).view(torch.int64) if lanes.dtype != torch.int64 else lanes
        else:
            lanes = lanes.to(torch.int64)
        size = lanes.numel()
        torch.mul(lanes, weights[:size], out=weighted[:size])
        sums.append(torch.stack([lanes.sum(), weighted[:size].sum()]))
        sizes.append(size)
    total, position = 0, 0
    modulus = (1 << 61) - 1
    for (plain, weighted_sum), size in zip(torch.stack(sums).tolist() if sums else [], sizes):
        total = (total * 1000003 + plain * 65599 + weighted_sum + position) % modulus
        position += size
    return f"{dtype_name(value.dtype)}{list(value.shape)}:{total:x}"


def _integer_view(piece):
    """The piece's bytes as integers (a view: an integer dtype of the element's width, or
    the piece itself), whose int64 values count every bit pattern, NaN payloads and
    -0.0 included."""
    if piece.is_complex():
        piece = torch.view_as_real(piece).reshape(-1)
    width = piece.element_size()
    if piece.dtype == torch.bool:
        piece = piece.view(torch.uint8)
    elif piece.is_floating_point():
        piece = piece.view({8: torch.int64, 4: torch.int32, 2: torch.int16, 1: torch.uint8}[width])
    return piece
