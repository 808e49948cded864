"""How outputs cross from one process to another: files of raw bytes, one per output
leaf, with their dtype and shape described beside them in JSON.

The reference worker writes the reference's outputs into the reference store, the
candidate child writes its outputs into its own work directory, and the judge reads both
back in chunks. Files, not shared GPU memory: a file outlives the process that wrote it
(the reference is computed once and read by every candidate of its task), needs nothing
but a directory (what the candidate's sandbox leaves writable), and is read in bounded
pieces whatever the output's size. Writing and reading both go in chunks of at most
CHUNK_BYTES, so neither side ever holds a second full-size copy of an output.

File names are fixed by position (`leaf_file`), never taken from what a writer reports:
the judge opens exactly the names it expects, without following links."""

import os
import stat
import threading

import numpy as np
import torch

# Flag of a response whose outputs did not fit on the harness's scratch filesystem (the
# host's fault; the client retries it with the device, and so the scratch, to itself).
SCRATCH_FULL = "scratch_full"

CHUNK_BYTES = 64 << 20

# dtype name -> the NumPy dtype its bytes are read and written as. bfloat16 and the
# float8 types have no NumPy dtype: they travel as integers of their width.
_STORAGE = {
    "float64": np.float64, "float32": np.float32, "float16": np.float16,
    "bfloat16": np.int16, "complex64": np.complex64, "complex128": np.complex128,
    "int64": np.int64, "int32": np.int32, "int16": np.int16, "int8": np.int8,
    "uint8": np.uint8, "bool": np.bool_,
}
_STORAGE.update({name: np.uint8 for name in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
                                             "float8_e5m2fnuz") if hasattr(torch, name)})


def dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def torch_dtype(name):
    """The torch dtype of a name this format carries, or None."""
    return getattr(torch, name) if name in _STORAGE else None


def leaf_file(prefix, index):
    return f"{prefix}-{index}.bin"


def flat_leaves(obj):
    """The outputs of a forward as a flat list (tuples/lists unpacked, in order)."""
    if isinstance(obj, (list, tuple)):
        return [leaf for item in obj for leaf in flat_leaves(item)]
    return [obj]


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


def _host_array(piece, staging):
    """A flat piece as a NumPy array over its bytes. A piece on a device is copied into
    `staging` (a _Staging): one reused host buffer, not a fresh allocation per piece."""
    name = dtype_name(piece.dtype)
    storage = _STORAGE[name]
    if name == "bfloat16" or name.startswith("float8"):
        piece = piece.view(torch.int16 if storage is np.int16 else torch.uint8)
    if piece.device.type == "cpu":
        return piece.numpy()
    return staging.copy(piece).numpy()


class _Staging:
    """The host buffer a device's pieces are copied through before they are written:
    pinned where the device is CUDA's (a direct DMA copy), as large as the largest piece
    so far (a leaf's pieces are equal but for its last), reused across pieces. Writing
    a 6.4 GB output from an H100 took 9 s with a fresh pageable copy per 64 MB piece."""

    def __init__(self):
        self.buffer = None

    def copy(self, piece):
        nbytes = piece.numel() * piece.element_size()
        if self.buffer is None or self.buffer.numel() < nbytes:
            self.buffer = self._allocate(nbytes, piece.device)
        host = self.buffer[:nbytes].view(piece.dtype)
        host.copy_(piece)
        return host

    @staticmethod
    def _allocate(nbytes, device):
        if device.type == "cuda":
            try:
                return torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
            except RuntimeError:  # pinning refused (a locked-memory limit): pageable, still reused
                pass
        return torch.empty(nbytes, dtype=torch.uint8)


def describe(value):
    """What a leaf is, for the record: a tensor's dtype and shape, or its kind."""
    tensor = as_tensor(value)
    if tensor is None:
        return {"kind": "none" if value is None else "other", "type": type(value).__name__}
    name = dtype_name(tensor.dtype)
    if name not in _STORAGE:
        return {"kind": "other", "type": f"Tensor of {name}"}
    return {"kind": "tensor", "dtype": name, "shape": list(tensor.shape),
            "nbytes": tensor.numel() * tensor.element_size()}


def write_leaves(values, directory, prefix):
    """Writes every tensor leaf of `values` to `directory`/leaf_file(prefix, i); returns
    the leaves' descriptions (describe())."""
    described = []
    staging = _Staging()
    for index, value in enumerate(flat_leaves(values)):
        info = describe(value)
        if info["kind"] == "tensor":
            tensor = as_tensor(value)
            per_piece = max(1, CHUNK_BYTES // max(1, tensor.element_size()))
            path = os.path.join(directory, leaf_file(prefix, index))
            with open(path, "wb") as handle:
                for piece in pieces(tensor.detach(), per_piece):
                    handle.write(memoryview(_host_array(piece, staging)).cast("B"))
        described.append(info)
    return described


class FileLeaf:
    """One output leaf in a file, read back in chunks. Opened without following links
    and required to be a regular file of exactly the described size: a writer cannot
    make the reader open something else (another process's output, say)."""

    def __init__(self, directory, prefix, index, info):
        self.dtype = torch_dtype(info["dtype"])
        self.shape = tuple(info["shape"])
        self.path = os.path.join(directory, leaf_file(prefix, index))
        self.storage = _STORAGE[info["dtype"]]
        self.numel = 1
        for extent in self.shape:
            self.numel *= extent
        self.nbytes = self.numel * np.dtype(self.storage).itemsize
        self.device = torch.device("cpu")
        self.sliceable = True

    def open(self):
        """The open file, or raises ValueError saying why it is not acceptable."""
        try:
            # O_NONBLOCK: a FIFO in the file's place must not hold the judge waiting for a
            # writer (the fstat below then refuses it); a plain file reads as ever.
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError as exc:
            raise ValueError(f"cannot open {os.path.basename(self.path)}: {exc.strerror}") from None
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode) or status.st_nlink != 1 or status.st_size != self.nbytes:
            os.close(fd)
            raise ValueError(f"{os.path.basename(self.path)} is not a plain file of "
                             f"{self.nbytes} bytes")
        return os.fdopen(fd, "rb")

    def chunks(self, handle, elements, start=0, count=None, pinned=False):
        """Flat CPU tensors of at most `elements` elements, in order: the leaf's elements
        [start, start + count) (default: all of them). They share one buffer (reused: no
        page faults per chunk), so each is valid until the next. `pinned`: the buffer is
        page-locked, so that a chunk copies to a CUDA device without another host copy."""
        left = self.numel - start if count is None else count
        itemsize = np.dtype(self.storage).itemsize
        if start:
            handle.seek(start * itemsize)
        raw = torch.empty(min(left, elements) * itemsize, dtype=torch.uint8, pin_memory=pinned)
        array = raw.numpy()
        while left > 0:
            nbytes = min(left, elements) * itemsize
            if handle.readinto(memoryview(array[:nbytes])) != nbytes:
                raise ValueError(f"{os.path.basename(self.path)} ended early")
            yield raw[:nbytes].view(self.dtype)
            left -= nbytes // itemsize


class TensorLeaf:
    """An in-memory tensor with FileLeaf's reading interface: the task host's reference
    outputs (on its device), tests' values."""

    def __init__(self, tensor):
        self.tensor = tensor.detach()
        self.dtype = tensor.dtype
        self.shape = tuple(tensor.shape)
        self.numel = tensor.numel()
        self.nbytes = self.numel * tensor.element_size()
        self.device = tensor.device

    def open(self):
        return None

    def _piece(self, flat, start, count):
        return flat[start:start + count]

    @property
    def sliceable(self):
        """Whether chunks() reads any slice [start, start + count) (a contiguous tensor),
        so that several threads can compare slices of it (compare_leaf)."""
        return self.tensor.is_contiguous()

    def chunks(self, _handle, elements, start=0, count=None, _pinned=False):
        """Flat chunks of exactly `elements` elements (the last may be shorter), on the
        tensor's device, like a FileLeaf's, so two leaves of any layouts read in step:
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


def digest(value):
    """A checksum of a forward's input (tensors by their bytes, plain values by repr) that
    changes when anything in it changes: enough to tell whether a forward wrote into its
    inputs without keeping a pristine copy of them. Computed where the value lives (on
    the device), in pieces."""
    if isinstance(value, np.ndarray):
        value = torch.from_numpy(value)
    if not isinstance(value, torch.Tensor):
        return repr(value) if isinstance(value, (bool, int, float, str, type(None))) else type(value).__name__
    total, position = 0, 0
    modulus = (1 << 61) - 1
    for piece in pieces(value.detach(), 1 << 22):
        lanes = _integer_lanes(piece)
        weights = torch.arange(1, lanes.numel() + 1, device=lanes.device, dtype=torch.int64)
        plain = int(lanes.sum())
        weighted = int((lanes * weights).sum())
        total = (total * 1000003 + plain * 65599 + weighted + position) % modulus
        position += lanes.numel()
    return f"{dtype_name(value.dtype)}{list(value.shape)}:{total:x}"


def _integer_lanes(piece):
    """The piece's bytes as int64 values (one per element of an integer dtype of the
    same width), so that every bit pattern counts, NaN payloads and -0.0 included."""
    if piece.is_complex():
        piece = torch.view_as_real(piece).reshape(-1)
    width = piece.element_size()
    if piece.dtype == torch.bool:
        piece = piece.view(torch.uint8)
    elif piece.is_floating_point():
        piece = piece.view({8: torch.int64, 4: torch.int32, 2: torch.int16, 1: torch.uint8}[width])
    return piece.to(torch.int64)
