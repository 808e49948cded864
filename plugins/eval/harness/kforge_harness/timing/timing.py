"""Measuring a forward call inside the child that runs it: the candidate's, or the
reference's own timing child (the same code times both, so identical code times the
same).

Per call (nothing of the harness's own per-leaf work inside the events: the outputs are
settled after them): the whole device is idle before the clock starts (the task host flushed the
L2 cache when it published the call's inputs: reference/host.py's `publish`, work no
loop of a candidate's can leave out); the call is bracketed by device events on the device's default stream
(KernelBench's measure); then the host waits for the end event, and after it for the
whole device (all streams): work hidden on a private stream, or left running past the
call, shows as the "tail" between the two. On the CPU the time is time.perf_counter_ns
around the call and the tail is 0.

Every primitive the clock uses is bound when it is made, before the candidate's module
is imported: the C-level event, synchronisation and tensor methods, not the Python
attributes a candidate could re-bind (torch.cuda.Event.record, torch.Tensor.zero_,
torch.cuda.synchronize are all plain attributes). Code running in this process can still
reach the clock natively; what it reports is data, which the server bounds with its own
clock (timing_plan.py)."""

import statistics
import time

import numpy as np
import torch

_TensorBase = getattr(torch._C, "TensorBase", None) or torch._C._TensorBase  # torch 1.x names it _TensorBase


class Clock:
    """One device's timed call, and the copies the harness makes in the child."""

    def __init__(self, device):
        self.accelerator = device.is_accelerator
        self._perf = time.perf_counter_ns
        self._copy = _TensorBase.copy_
        self._dense = (_TensorBase.is_contiguous, _TensorBase.is_neg, _TensorBase.is_conj)
        self._densify = (_TensorBase.contiguous, _TensorBase.resolve_neg, _TensorBase.resolve_conj)
        self._dense_array = np.ascontiguousarray
        self._no_dispatch = torch._C._DisableTorchDispatch
        self._no_torch_function = torch._C.DisableTorchFunction
        if device.type == "cuda":
            events = torch._C._CudaEventBase
            self._record = events.record
            self._event_sync = events.synchronize
            self._elapsed = events.elapsed_time
            self._device_sync = torch._C._cuda_synchronize
            self._stream = torch.cuda.default_stream(torch.device(device.name))
            self._start = torch.cuda.Event(enable_timing=True)
            self._end = torch.cuda.Event(enable_timing=True)
        elif self.accelerator:  # an NPU: its module's own primitives, bound now too
            module = device.module(torch)
            self._device_sync = module.synchronize
            self._npu = module
            self._start = module.Event(enable_timing=True)
            self._end = module.Event(enable_timing=True)
            self._record = type(self._start).record
            self._event_sync = type(self._start).synchronize
            self._elapsed = type(self._start).elapsed_time
            self._stream = None
        else:
            self._device_sync = None

    def synchronize(self):
        if self._device_sync is not None:
            self._device_sync()

    def copy(self, target, source):
        """target <- source with the bound copy (the hand-over of an output)."""
        self._copy_plainly(target, source)

    def settle(self, out):
        """`out` with every leaf the hand-over will read made dense: a plain tensor
        contiguous with its negative and conjugate bits resolved, a NumPy array
        C-contiguous. A call's outputs are settled right after its events, inside the
        server's bracket, so that work a candidate leaves to the hand-over's copy (a
        transpose as strides, a negation as a bit, a broadcast as zero strides) is seen
        by the server's clock as its own; a dense output (the reference's, as a rule)
        costs nothing here. Containers are read as
        outputs.flat_leaves reads them, through tuple's, list's and dict's own methods (no
        method of a subclass runs): a tuple comes back a plain tuple, a list's items are
        replaced in place (a list of the harness's own, kbx's Replayed, keeps its type)."""
        if type(out) is torch.Tensor:
            is_contiguous, is_neg, is_conj = self._dense
            contiguous, resolve_neg, resolve_conj = self._densify
            if is_conj(out):
                out = resolve_conj(out)
            if is_neg(out):
                out = resolve_neg(out)
            return out if is_contiguous(out) else contiguous(out)
        if isinstance(out, np.ndarray):
            return self._dense_array(out)
        if isinstance(out, tuple):
            return tuple(self.settle(tuple.__getitem__(out, i)) for i in range(tuple.__len__(out)))
        if isinstance(out, list):
            list.__setitem__(out, slice(None), [self.settle(list.__getitem__(out, i))
                                                for i in range(list.__len__(out))])
        elif isinstance(out, dict):
            for key in list(dict.keys(out)):
                dict.__setitem__(out, key, self.settle(dict.__getitem__(out, key)))
        return out

    def _copy_plainly(self, target, source):
        """target <- source with no Python dispatch mode or __torch_function__ of the
        candidate's in the way (a mode it entered at import would otherwise run its own
        code as the harness's copy)."""
        with self._no_torch_function():
            guard = self._no_dispatch()
            if hasattr(guard, "__enter__"):  # a context manager in torch 2.x
                with guard:
                    self._copy(target, source)
            else:  # a guard object in torch 1.x, active while it lives
                self._copy(target, source)
                del guard

    def call(self, call):
        """(outputs, event ms, tail ms, settle ms) of call() after an idle device, its
        outputs settled once its clock stopped: the harness's own work per output leaf,
        which the reference's time must not hold (a candidate's loop of its own leaves it
        out). What settling does for a candidate (a transpose left as strides made
        dense) is outside its events: on a GPU in its tail, and on either device inside
        the server's bracket, whose clock charges it (timing_plan.charged). `settle ms`
        is the host's time spent settling."""
        if not self.accelerator:
            start = self._perf()
            out = call()
            ended = self._perf()
            out = self.settle(out)
            return out, (ended - start) / 1e6, 0.0, (self._perf() - ended) / 1e6
        self._device_sync()
        if self._stream is not None:
            self._record(self._start, self._stream)
        else:
            self._record(self._start)
        out = call()
        if self._stream is not None:
            self._record(self._end, self._stream)
        else:
            self._record(self._end)
        settling = self._perf()
        out = self.settle(out)
        settled = self._perf()
        self._event_sync(self._end)
        stream_done = self._perf()
        # The whole device, every stream: what the call left running counts here.
        self._device_sync()
        tail = (self._perf() - stream_done) / 1e6
        return out, self._elapsed(self._start, self._end), tail, (settled - settling) / 1e6


def summarise(samples):
    """What a loop's timed calls (milliseconds each) report: "ms" (the median: kforge's
    speedups compare medians, which one slow call does not move), "p90", and the
    statistics KernelBench's runtime_stats carry: "mean", "std" (population, as
    KernelBench's np.std), "min", "max" and "trials" (how many calls they describe)."""
    ordered = sorted(samples)
    p90 = ordered[min(len(ordered) - 1, int(round(0.9 * (len(ordered) - 1))))]
    return {"ms": statistics.median(ordered), "p90": p90,
            "mean": statistics.fmean(ordered), "std": statistics.pstdev(ordered),
            "min": ordered[0], "max": ordered[-1], "trials": len(ordered)}
