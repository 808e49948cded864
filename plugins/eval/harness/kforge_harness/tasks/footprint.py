"""What a KernelBench-format task's reference needs at given sizes: memory and work.

Two ways to find out, used by fit.py:
- `on_meta`: builds the model and runs its forward on PyTorch's meta device (shapes and
  dtypes, no data, no compute). Shape errors, asserts and divisibility errors surface as
  they would for real, in milliseconds, whatever the sizes. Memory is the peak of the
  bytes held by live tensors (a dispatch mode sees every tensor an operator creates and
  notices, through a weak reference, when it dies); work is a cost count (multiply-adds
  of matmuls and convolutions, elements of everything else) used to predict time.
- `on_device`: runs it for real. On CPU in a forked child, whose peak resident anonymous
  memory over its start is the measure (it sees allocator workspaces the meta run cannot,
  e.g. im2col buffers); on an accelerator in this process, with the caching allocator's
  peak statistics, emptied afterwards.

Both change the process they run in (RNG states, the task's imports, on an accelerator
its memory): fit.py calls them in a forked child of its caller.
"""

import ast
import contextlib
import dataclasses
import math
import os
import re
import resource
import sys
import time
import traceback
import types
import weakref

import numpy as np
import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from kforge_harness.tasks import forked
from kforge_harness.tasks.sizes import rewrite_sizes

MB = 1024 * 1024
_MODULE_NAME = "kforge_fit_task"

# Errors that say "the meta device cannot run this" rather than "the task is invalid".
_META_UNSUPPORTED = re.compile(
    r"Meta'? backend|meta tensor|on meta|device type meta|data-dependent|\.item\(\)|"
    r"is_nonzero|DataDependent|numpy\(\)|Tensor\.tolist|storage of a meta|meta device",
    re.IGNORECASE)
_OUT_OF_MEMORY = re.compile(
    r"out of memory|can't allocate memory|cannot allocate memory|bad_alloc|"
    r"failed to allocate|MemoryError", re.IGNORECASE)


@dataclasses.dataclass
class Outcome:
    """What one run of the reference at one size assignment gave.

    kind: "ok", "import" (the task's own import failed: `missing` names the module),
    "meta_unsupported", "memory" (allocation failed), "timeout" or "error" (the task
    is invalid at these sizes). `phase` says where it failed: module, init inputs, init,
    inputs or forward. `shapes`: the distinct tensor shapes a meta run made (not in JSON)."""

    kind: str
    peak_bytes: int = 0
    work: int = 0
    forward_s: float = None  # wall time of one forward (real runs)
    forward_cpu_s: float = None  # its CPU time: what the machine's load does not change
    error: str = ""
    phase: str = ""
    missing: str = None
    shapes: frozenset = frozenset()
    weight_bytes: int = 0  # of the model's parameters and buffers (meta runs)

    @property
    def ok(self):
        return self.kind == "ok"

    def to_json(self):
        return {field.name: getattr(self, field.name) for field in dataclasses.fields(self)
                if field.name != "shapes"}

    @classmethod
    def from_json(cls, data):
        return cls(**data)


class TaskCode:
    """A task file's source, executed at chosen sizes into a fresh module."""

    def __init__(self, source, path, task_format="kernelbench-torch"):
        self.source = source
        self.path = path
        self.format = task_format

    def tree(self, sizes):
        tree = ast.parse(self.source, filename=self.path)
        rewrite_sizes(tree, sizes, where=self.path)
        return tree

    @contextlib.contextmanager
    def module(self, sizes):
        """The task's module at `sizes`, registered in sys.modules (dataclasses and
        typing look classes' modules up there) only while it is in use."""
        code = compile(self.tree(sizes), self.path, "exec")
        module = types.ModuleType(_MODULE_NAME)
        module.__file__ = self.path
        previous = sys.modules.get(_MODULE_NAME)
        sys.modules[_MODULE_NAME] = module
        try:
            exec(code, module.__dict__)  # noqa: S102 - the task is trusted reference code
            yield module
        finally:
            if previous is None:
                sys.modules.pop(_MODULE_NAME, None)
            else:
                sys.modules[_MODULE_NAME] = previous

    def build(self, module, init_inputs):
        """(model, forward): forward(inputs) calls the model as the harness would: a
        NumPy reference's forward gets the arrays; a MindSpore task runs its PyTorch
        fallback (TorchModel) on tensors made from the arrays where it has one, its
        MindSpore Model on MindSpore tensors otherwise."""
        if self.format == "kernelbench-numpy":
            model = module.Model(*init_inputs)
            return model, lambda inputs: (getattr(model, "forward", None) or model)(*inputs)
        if self.format == "kernelbench-mindspore":
            if hasattr(module, "TorchModel"):
                model = module.TorchModel(*init_inputs)
                return model, lambda inputs: model(*[torch.from_numpy(a) if isinstance(a, np.ndarray)
                                                     else a for a in inputs])
            import mindspore  # noqa: PLC0415 - only MindSpore tasks without a fallback need it
            model = module.Model(*init_inputs)
            return model, lambda inputs: model(*[mindspore.Tensor(a) if isinstance(a, np.ndarray)
                                                 else a for a in inputs])
        model = module.Model(*init_inputs)
        return model, lambda inputs: model(*inputs)


# ---- the meta run ----

# Functions that make a tensor from nothing: on the meta device they must make a meta
# tensor, whatever device the task asks for.
_FACTORIES = {torch.empty, torch.zeros, torch.ones, torch.full, torch.rand, torch.randn,
              torch.randint, torch.randperm, torch.arange, torch.linspace, torch.logspace,
              torch.eye, torch.tensor, torch.as_tensor, torch.scalar_tensor,
              torch.empty_strided, torch.normal, torch.tril_indices, torch.triu_indices}
_MOVES = {torch.Tensor.cuda, torch.Tensor.cpu}


def _storage(tensor):
    return tensor.untyped_storage() if hasattr(tensor, "untyped_storage") else tensor.storage()


class _OnMeta(TorchFunctionMode):
    """Every tensor the task makes is made on the meta device."""

    def __torch_function__(self, func, types_, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func in _FACTORIES and not (func is torch.normal and args
                                       and isinstance(args[0], torch.Tensor)):
            kwargs["device"] = "meta"
        elif func in _MOVES:
            return args[0]
        elif func is torch.from_numpy:  # no copy, then a meta tensor of its shape
            return func(*args, **kwargs).to("meta")
        elif func is torch.Tensor.to:
            args = tuple("meta" if isinstance(a, (str, torch.device)) else a for a in args)
            if "device" in kwargs:
                kwargs["device"] = "meta"
        return func(*args, **kwargs)


def _numel(shape):
    return math.prod(int(d) for d in shape)


def _work(func, args, outputs):
    """Cost of one operator: multiply-adds for matmuls and convolutions (they dominate
    time where they occur), elements written for everything else."""
    name = func.overloadpacket.__name__ if hasattr(func, "overloadpacket") else str(func)
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    written = sum(o.numel() for o in outputs)
    if name in ("mm", "bmm", "addmm", "baddbmm", "addbmm") and len(tensors) >= 2:
        a = tensors[-2]
        return written * a.shape[-1]
    if name == "convolution" and len(tensors) >= 2:
        x, weight = tensors[0], tensors[1]
        transposed = bool(args[6]) if len(args) > 6 else False
        taps = _numel(weight.shape[1:])  # in-channels per group x kernel taps
        return (x.numel() * taps) if transposed else written * taps
    return written


def _map_tensors(obj, function):
    if isinstance(obj, torch.Tensor):
        return function(obj)
    if isinstance(obj, (list, tuple)):
        return type(obj)(_map_tensors(item, function) for item in obj)
    return obj


def _on_cpu_zeros(func, args, kwargs, limit_bytes):
    inputs = []
    _map_tensors((args, tuple(kwargs.values())), inputs.append)
    needed = sum(t.numel() * t.element_size() for t in inputs if t.device.type == "meta")
    if needed > limit_bytes:
        raise MemoryError(f"{func} has no meta kernel, and its inputs ({needed / MB:.0f} MB) "
                          f"are too big to run it on zeros (at most {limit_bytes / MB:.0f} MB)")

    def to_cpu(tensor):
        if tensor.device.type != "meta":
            return tensor
        return torch.ops.aten.zeros.default(list(tensor.shape), dtype=tensor.dtype,
                                            device="cpu")

    def to_meta(tensor):
        return torch.ops.aten.empty_strided.default(list(tensor.shape), list(tensor.stride()),
                                                    dtype=tensor.dtype, device="meta")

    out = func(*_map_tensors(args, to_cpu),
               **{key: _map_tensors(value, to_cpu) for key, value in kwargs.items()})
    return _map_tensors(out, to_meta)


class _LiveBytes(TorchDispatchMode):
    """Tracks the bytes held by live tensors (their storages) and the peak of that sum,
    and adds up the operators' work."""

    def __init__(self, fallback_bytes):
        super().__init__()
        self.fallback_bytes = fallback_bytes
        self.live = 0
        self.peak = 0
        self.work = 0
        self._holders = {}  # storage id -> [bytes, live tensors known to hold it]
        self.shapes = set()
        self.weight_bytes = 0

    def hold(self, tensor):
        """Counts `tensor`'s storage until the last tensor known to hold it dies."""
        self.shapes.add(tuple(tensor.shape))
        storage = _storage(tensor)
        key = storage._cdata
        entry = self._holders.get(key)
        if entry is None:
            entry = self._holders[key] = [storage.nbytes(), 0]
            self.live += entry[0]
            self.peak = max(self.peak, self.live)
        entry[1] += 1
        weakref.finalize(tensor, self._release, key)

    def hold_weight(self, tensor):
        """hold() for a parameter or buffer of the model, also counted as weights."""
        new = _storage(tensor)._cdata not in self._holders
        self.hold(tensor)
        if new:
            self.weight_bytes += _storage(tensor).nbytes()

    def _release(self, key):
        entry = self._holders.get(key)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] == 0:
            self.live -= entry[0]
            del self._holders[key]

    def __torch_dispatch__(self, func, types_, args=(), kwargs=None):
        kwargs = kwargs or {}
        try:
            out = func(*args, **kwargs)
        except NotImplementedError:
            # This torch has no meta kernel for the operator (1.13: 3D max pooling): run
            # it on zeros on the CPU, for its output shapes, where its inputs are small
            # enough to be cheap; bigger, the run fails as out of memory (too big).
            out = _on_cpu_zeros(func, args, kwargs, self.fallback_bytes)
        results = out if isinstance(out, (tuple, list)) else (out,)
        returns = func._schema.returns
        fresh = []
        for index, value in enumerate(results):
            # A return that aliases an argument (a view, an in-place or out= result) holds
            # no new memory.
            aliased = index < len(returns) and returns[index].alias_info is not None
            if isinstance(value, torch.Tensor) and not aliased:
                fresh.append(value)
                self.hold(value)
        self.work += _work(func, args, fresh)
        return out


def _failure(exc, phase, path):
    """An Outcome for an exception the task's code raised; the location is the innermost
    line of the task file (not of torch's dispatch machinery) where there is one."""
    text = f"{type(exc).__name__}: {exc}".strip()
    frames = traceback.extract_tb(exc.__traceback__)
    frames = [f for f in frames if f.filename == path] or frames
    if frames:
        last = frames[-1]
        text += f" ({os.path.basename(last.filename)}:{last.lineno}, in {last.name})"
    if isinstance(exc, ImportError) and phase == "module":
        return Outcome("import", error=text, phase=phase, missing=exc.name)
    if isinstance(exc, MemoryError) or _OUT_OF_MEMORY.search(str(exc)):
        return Outcome("memory", error=text, phase=phase)
    return Outcome("error", error=text, phase=phase)


def _timed(forward, inputs, sync):
    """(output, wall seconds, CPU seconds of this process) of one forward."""
    wall, cpu = time.perf_counter(), time.process_time()
    output = forward(inputs)
    sync()
    return output, time.perf_counter() - wall, time.process_time() - cpu


def _reference_run(code, sizes, hold, time_again_over_s=0, sync=lambda: None):
    """Runs the reference once at `sizes`: returns (outcome, outputs). `hold` is called
    with the model's parameters and buffers (made before a tracker could see them). A
    first forward that took more CPU time than `time_again_over_s` (> 0) may have paid
    one-time costs (lazy library loading): it runs again, unless it took over 4 times as
    long, and the cheaper run counts.
    Exceptions become an Outcome naming the phase."""
    phase = "module"
    try:
        with code.module(sizes) as module:
            phase = "init inputs"
            init_inputs = module.get_init_inputs() if hasattr(module, "get_init_inputs") else []
            phase = "init"
            model, forward = code.build(module, init_inputs)
            if isinstance(model, torch.nn.Module):
                for tensor in list(model.parameters()) + list(model.buffers()):
                    hold(tensor)
            phase = "inputs"
            inputs = module.get_inputs()
            phase = "forward"
            output, wall, cpu = _timed(forward, inputs, sync)
            if 0 < time_again_over_s < cpu <= 4 * time_again_over_s:
                del output
                output, wall_again, cpu_again = _timed(forward, inputs, sync)
                if cpu_again < cpu:
                    wall, cpu = wall_again, cpu_again
            return Outcome("ok", forward_s=wall, forward_cpu_s=cpu), output
    except Exception as exc:  # noqa: BLE001 - any failure of the task's code is a finding
        return _failure(exc, phase, code.path), None


def on_meta(code, sizes, fallback_bytes):
    """The reference at `sizes` on the meta device, in this process. An operator without
    a meta kernel runs on zeros on the CPU if its inputs take at most `fallback_bytes`."""
    tracker = _LiveBytes(fallback_bytes)
    with torch.no_grad(), _OnMeta(), tracker:
        outcome, output = _reference_run(code, sizes, tracker.hold_weight)
        peak, work = tracker.peak, tracker.work
        outcome.shapes = frozenset(tracker.shapes)
        outcome.weight_bytes = tracker.weight_bytes
        del output
    if outcome.kind == "error" and _META_UNSUPPORTED.search(outcome.error):
        outcome.kind = "meta_unsupported"
    outcome.peak_bytes, outcome.work = peak, work
    return outcome


# ---- the real run ----

def _proc_status():
    values = {}
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            key, _, rest = line.partition(":")
            if key in ("VmHWM", "RssAnon", "RssFile", "RssShmem", "VmSize"):
                values[key] = int(rest.split()[0]) * 1024
    return values


def limit_address_space(extra_bytes):
    """Lets this process map at most `extra_bytes` more than it has now (a soft limit:
    its children may set their own)."""
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    soft = _proc_status()["VmSize"] + int(extra_bytes)
    resource.setrlimit(resource.RLIMIT_AS, (soft if hard == resource.RLIM_INFINITY else min(soft, hard), hard))


def _cpu_run(code, sizes, address_limit, time_again_over_s):
    """In a forked child: run once, report the peak resident memory above the start.
    File-backed pages (torch's code, faulted in lazily after fork) are not the task's
    memory: the peak counts anonymous and shared memory only (file pages only grow, so
    their count at the end bounds their count at the peak)."""
    start = _proc_status()
    if address_limit:
        limit_address_space(address_limit)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    with torch.no_grad():
        outcome, output = _reference_run(code, sizes, lambda tensor: None, time_again_over_s)
    end = _proc_status()
    del output
    outcome.peak_bytes = max(0, end["VmHWM"] - end["RssFile"] - start["RssAnon"]
                             - start["RssShmem"])
    return outcome.to_json()


def _on_cpu(code, sizes, timeout_s, address_limit, time_again_over_s):
    try:
        return Outcome.from_json(forked.call(
            lambda: _cpu_run(code, sizes, address_limit, time_again_over_s), timeout_s))
    except forked.ChildFailed as exc:
        if exc.kind == "timeout":
            return Outcome("timeout", error=f"the reference took more than {timeout_s:g} s "
                           "to build and run once")
        if exc.kind == "killed":
            return Outcome("memory", error=f"the reference was killed: {exc}")
        return Outcome("error", error=f"the reference crashed: {exc}")


def _on_accelerator(code, sizes, device, time_again_over_s):
    module = device.module(torch)
    module.set_device(device.index)
    module.synchronize()
    module.reset_peak_memory_stats()
    base = module.memory_allocated()
    # Tensors made without a device go to the accelerator, as the harness makes them
    # (torch >= 2.0; older versions make them on the host, as the harness does there).
    default_device = (torch.device(device.name) if hasattr(torch, "set_default_device")
                      else contextlib.nullcontext())
    with torch.no_grad(), default_device:
        outcome, output = _reference_run(code, sizes, lambda tensor: None,
                                         time_again_over_s, module.synchronize)
        del output
    module.synchronize()
    outcome.peak_bytes = max(0, module.max_memory_allocated() - base)
    module.empty_cache()
    return outcome


def on_device(code, sizes, device, timeout_s=120.0, address_limit=0, time_again_over_s=0):
    """The reference at `sizes` for real on `device` (a devices.Device): its measured
    peak memory and forward time. On CPU it runs in a forked child (killed after
    `timeout_s`; `address_limit` bytes of address space beyond the child's start, 0: no
    limit); on an accelerator in this process (fit.py calls it in its own child)."""
    if device.is_accelerator:
        return _on_accelerator(code, sizes, device, time_again_over_s)
    return _on_cpu(code, sizes, timeout_s, address_limit, time_again_over_s)
