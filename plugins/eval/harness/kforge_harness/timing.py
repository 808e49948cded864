"""Timing a forward call the way KernelBench does: warm-up, then per trial synchronize,
flush the L2 cache, device events on the current stream around the call; the median of
the trials is what counts. On the CPU the clock is time.perf_counter_ns."""

import statistics
import time

# Larger than any current GPU's L2 (H100: 50 MB, H200: 60 MB): writing it evicts the
# inputs and weights the previous call left in the cache.
L2_FLUSH_BYTES = 256 * 1024 * 1024


class Timer:
    def __init__(self, torch, device, warmup, trials, flush_l2):
        self.torch = torch
        self.device = device
        self.warmup = warmup
        self.trials = trials
        self.flush_buffer = None
        if device.is_accelerator and flush_l2:
            self.flush_buffer = torch.empty(L2_FLUSH_BYTES, dtype=torch.uint8,
                                            device=device.name)

    def measure(self, call):
        """Milliseconds per call: (median, p90) over `trials` timed calls."""
        for _ in range(self.warmup):
            call()
        self.device.synchronize(self.torch)
        samples = [self._timed(call) for _ in range(self.trials)]
        return summarise(samples)

    def _timed(self, call):
        if not self.device.is_accelerator:
            start = time.perf_counter_ns()
            call()
            return (time.perf_counter_ns() - start) / 1e6
        module = self.device.module(self.torch)
        module.synchronize()
        if self.flush_buffer is not None:
            self.flush_buffer.zero_()
        # Events are recorded on the current stream: work a candidate hides on a side
        # stream is not waited for (the L1 rules reject side streams for that reason).
        start, end = module.Event(enable_timing=True), module.Event(enable_timing=True)
        start.record()
        call()
        end.record()
        end.synchronize()
        return start.elapsed_time(end)


def summarise(samples):
    ordered = sorted(samples)
    p90 = ordered[min(len(ordered) - 1, int(round(0.9 * (len(ordered) - 1))))]
    return statistics.median(ordered), p90
