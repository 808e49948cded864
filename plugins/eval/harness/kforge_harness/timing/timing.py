"""Measuring forward calls: what the reference worker and the candidate child run.

Every timed call gets its own input set from a pool made before the loop (`InputPool`),
so a kernel that memoizes by pointer, shape or content, or works only in its first
calls, gains nothing. Per call, the L2 cache is flushed and the whole device is idle
before the clock starts; the call is bracketed by device events on the current stream
(KernelBench's measure); then the host waits for the end event (the current stream's
work) and after it for the whole device (all streams): work hidden on a private stream,
or left running past the call, shows as the "tail" between the two. The host's own time
in the call (Python, a launcher) is over before the end event is done: not in the tail. On the
CPU the times are time.perf_counter_ns around the call and the tail is 0. The candidate's numbers are data: the
server (timing_plan.py) brackets each call with its own clock and decides."""

import statistics
import time

import numpy as np

# Larger than any current GPU's L2 (H100: 50 MB, H200: 60 MB): writing it evicts the
# inputs and weights the previous call left in the cache.
L2_FLUSH_BYTES = 256 * 1024 * 1024
MB = 1 << 20


def pool_size(set_bytes, calls, budget_mb):
    """How many input sets a pool holds: as many as `budget_mb` fits, never fewer than 2
    (consecutive calls always see different memory) nor more than half the calls (every
    slot is refilled in place at least once: a kernel that caches by pointer returns a
    stale output there, and the late spot check falls among those calls)."""
    fits = int(budget_mb * MB) // max(1, int(set_bytes))
    return max(2, min((int(calls) + 1) // 2, fits))


def input_bytes(inputs):
    """Bytes of the tensors and arrays among one input set."""
    total = 0
    for value in inputs:
        if isinstance(value, np.ndarray):
            total += value.nbytes
        elif hasattr(value, "element_size") and hasattr(value, "numel"):
            total += value.element_size() * value.numel()
    return total


class Clock:
    """One device's timed call: (outputs, event ms, device-synchronised wall ms, tail ms)."""

    def __init__(self, torch, device, flush_l2):
        self.torch = torch
        self.device = device
        self.module = device.module(torch) if device.is_accelerator else None
        self.flush_buffer = None
        if device.is_accelerator and flush_l2:
            self.flush_buffer = torch.empty(L2_FLUSH_BYTES, dtype=torch.uint8,
                                            device=device.name)

    def idle(self):
        """Flushes L2 and waits for the whole device: what precedes every timed call."""
        if self.flush_buffer is not None:
            self.flush_buffer.zero_()
        self.device.synchronize(self.torch)

    def call(self, call):
        if self.module is None:
            start = time.perf_counter_ns()
            out = call()
            elapsed = (time.perf_counter_ns() - start) / 1e6
            return out, elapsed, elapsed, 0.0
        start_event = self.module.Event(enable_timing=True)
        end_event = self.module.Event(enable_timing=True)
        wall_start = time.perf_counter_ns()
        start_event.record()
        out = call()
        end_event.record()
        end_event.synchronize()
        stream_done = time.perf_counter_ns()
        # The whole device, every stream: what the call left running counts here.
        self.module.synchronize()
        end = time.perf_counter_ns()
        return out, start_event.elapsed_time(end_event), (end - wall_start) / 1e6, (end - stream_done) / 1e6

    def bare_gap(self):
        """The tail of an empty bracket (ms): what waiting for an idle device after the
        end event costs in this process, which every honest call's tail pays too. 0
        where there are no events."""
        if self.module is None:
            return 0.0
        return self.call(lambda: None)[3]


class InputPool:
    """Input sets for timed calls, `size` slots: call k uses slot k % size; `refill`
    writes the set of another seed into a slot's memory (same pointers, new values), or
    replaces the set where shapes differ; at most `size` + 1 sets live."""

    def __init__(self, make, seeds):
        self.make = make
        self.sets = [make(seed) for seed in seeds]

    def __len__(self):
        return len(self.sets)

    def inputs(self, call_index):
        return self.sets[call_index % len(self.sets)]

    def refill(self, call_index, seed):
        slot = call_index % len(self.sets)
        new = self.make(seed)
        if not _copy_into(self.sets[slot], new):
            self.sets[slot] = new


def _copy_into(old, new):
    """Copies input set `new` into `old`'s memory; False (nothing copied) when they differ
    in length, kinds, shapes, dtypes or devices, or in a non-tensor value."""
    if len(old) != len(new):
        return False
    for a, b in zip(old, new):
        if type(a) is not type(b):
            return False
        if isinstance(a, np.ndarray):
            if a.shape != b.shape or a.dtype != b.dtype or not a.flags.writeable:
                return False
        elif hasattr(a, "copy_"):
            if a.shape != b.shape or a.dtype != b.dtype or a.device != b.device:
                return False
        elif not (a == b) is True:
            return False
    try:
        for a, b in zip(old, new):
            if isinstance(a, np.ndarray):
                np.copyto(a, b)
            elif hasattr(a, "copy_"):
                a.copy_(b)
    except RuntimeError:  # a leaf that requires grad, say: the caller takes `new` whole
        return False
    return True


class Timer:
    """The reference worker's timing (trusted code, so no brackets from outside):
    `warmup` calls, then `trials` timed calls, rotating over an InputPool."""

    def __init__(self, torch, device, warmup, trials, flush_l2):
        self.warmup = warmup
        self.trials = trials
        self.clock = Clock(torch, device, flush_l2)

    def measure(self, call, pool):
        """Milliseconds per call of call(inputs): `summarise` of the timed calls."""
        samples = []
        for index in range(self.warmup + self.trials):
            inputs = pool.inputs(index)
            self.clock.idle()
            event_ms = self.clock.call(lambda: call(inputs))[1]
            if index >= self.warmup:
                samples.append(event_ms)
        return summarise(samples)


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
