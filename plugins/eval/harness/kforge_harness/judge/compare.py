"""Comparing candidate outputs with reference outputs under a configurable rule (per
element, and over the whole output), and detecting references too constant for a
comparison to prove anything.

Outputs are read in chunks of CHUNK_ELEMENTS elements (outputs.FileLeaf from the files
the reference worker and the candidate child wrote, or outputs.TensorLeaf in memory),
and each chunk is compared in float64: a difference of fp32 values is exact, and the
memory a comparison takes is a few times the chunk, whatever the output's size (a 6 GB
output once needed 12 GB of float64 temporaries on the device). The statistics are
accumulated over the chunks, so verdicts and metrics are those of one pass over the
whole output.

Large file leaves can be compared on an accelerator (a device judge, server.JudgePool):
their chunks are read into page-locked buffers and copied to the device, where the same
statistics are computed. The arithmetic is the same float64 arithmetic; only the order
in which sums are added differs, within float64 rounding."""

import math
from concurrent.futures import ThreadPoolExecutor

import torch

from kforge_harness import protocol
from kforge_harness.judge.outputs import (FileLeaf, TensorLeaf, as_tensor, dtype_name, flat_leaves,
                                          pieces)

# 64K elements: the chunk's float64 temporaries (five buffers, ~2.2 MB) stay in the CPU's
# cache across the dozen passes the statistics make over them. Measured on the 2-core VM:
# 2.2 ms/MB of CPU against 27 ms/MB with 2M-element chunks, whose buffers (64 MB) are
# streamed from memory by every pass.
CHUNK_ELEMENTS = 1 << 16

# A file leaf compared by several workers is cut into contiguous slices of at least this
# many chunks each: below it a thread's start-up costs more than its share of the work.
MIN_CHUNKS_PER_WORKER = 64

# On a device, chunks of 16M elements: the chunk's float64 buffers take 0.5 GB of device
# memory, and each chunk costs a dozen synchronisations (the statistics read back): a
# 6.4 GB output is 100 chunks.
DEVICE_CHUNK_ELEMENTS = 1 << 24

# Leaves of at least this many bytes are compared on the judge's device, when it has
# one: below it, the copies and synchronisations cost more than the CPU's arithmetic.
DEVICE_MIN_BYTES = 64 << 20


# The judge's statistics of one trial, as metrics (PROTOCOL.md): per output, then the
# worst output (for mean_*: the mean over outputs); over trials, the worst trial (for
# mean_*: the mean over trials).
TRIAL_METRICS = ("max_abs_diff", "mean_abs_diff", "rel_l2_error", "share_over_coarse",
                 "max_rel_error", "mean_rel_error")


def _per_dtype(value, dtype, default=None):
    """A rule field that is a number or a {dtype name: number} map, for `dtype` (a map
    without the dtype uses its float32 entry); `default` when absent."""
    if value is None:
        return default
    if isinstance(value, dict):
        name = dtype_name(dtype)
        return float(value.get(name, value.get("float32", default)))
    return float(value)


def tolerance(rule, dtype):
    """(atol, rtol) for outputs of `dtype` under `rule`: integer and bool outputs must be
    exact; a floating dtype the rule does not list uses the float32 numbers."""
    if not (dtype.is_floating_point or dtype.is_complex):
        return 0.0, 0.0
    kind = rule["kind"]
    if kind == "allclose":
        return _per_dtype(rule["atol"], dtype), _per_dtype(rule["rtol"], dtype)
    if kind == "max_abs_diff":
        return rule["limit"], 0.0
    return rule["atol"], rule["rtol"]


class WholeOutput:
    """The whole-output part of a rule for one dtype (None for a check it does not make):
    `coarse_atol`/`coarse_rtol`, the coarse bound |c - r| > coarse_atol + coarse_rtol*|r|
    that share_over_coarse counts (always measured; protocol.COARSE_BOUND by default);
    `max_coarse_share`, the share of elements allowed over it; `max_rel_l2`, the bound on
    RMS(c - r) / max(RMS(r), atol)."""

    def __init__(self, rule, dtype):
        exact = not (dtype.is_floating_point or dtype.is_complex)
        self.coarse_atol = 0.0 if exact else _per_dtype(
            rule.get("coarse_atol"), dtype, _per_dtype(protocol.COARSE_BOUND["coarse_atol"], dtype))
        self.coarse_rtol = 0.0 if exact else _per_dtype(
            rule.get("coarse_rtol"), dtype, _per_dtype(protocol.COARSE_BOUND["coarse_rtol"], dtype))
        self.max_coarse_share = _per_dtype(rule.get("max_coarse_share"), dtype)
        self.max_rel_l2 = None if exact else _per_dtype(rule.get("max_rel_l2"), dtype)


class Outcome:
    """The verdict of one trial's comparison. `metrics`: TRIAL_METRICS (absent when
    nothing was compared). `intervals`: per output leaf, (number of elements, the
    interval of constants that would have passed it, or None), for the near-constant
    detector; set when every leaf was compared."""

    def __init__(self, error_class="", message="", metrics=None, intervals=None):
        self.error_class = error_class
        self.message = message
        self.metrics = metrics or {}
        self.intervals = intervals or []

    @property
    def passed(self):
        return not self.error_class

    @property
    def max_abs_diff(self):
        return self.metrics.get("max_abs_diff")

    @property
    def mean_abs_diff(self):
        return self.metrics.get("mean_abs_diff")


class _Stats:
    """What one pass over a leaf pair accumulates, chunk by chunk. The float64 buffers are
    allocated once per leaf and reused for every chunk: fresh multi-MB allocations go back
    to the kernel when freed, and faulting their pages in again cost more than the
    arithmetic."""

    def __init__(self, atol, rtol, whole, device=None):
        self.device = device or torch.device("cpu")
        self.atol, self.rtol = atol, rtol
        self.whole = whole
        # Relative errors are |c - r| / max(|r|, floor): elements near zero are measured
        # against the rule's absolute tolerance, not against a vanishing reference.
        self.floor = atol if atol > 0 else 1e-30
        self.max_diff = 0.0
        self.nan_diff = False
        self.finite_sum, self.finite_count = 0.0, 0
        self.ref_nan = self.cand_nan = 0
        self.within = 0  # elements with |c - r| <= atol + rtol * |r|
        self.over_coarse = 0  # elements with |c - r| > coarse_atol + coarse_rtol * |r|
        self.diff_squares, self.ref_squares = 0.0, 0.0  # over finite elements
        self.max_rel, self.rel_sum = 0.0, 0.0
        self.lo, self.hi = -math.inf, math.inf  # constants that pass every element so far
        self.bounded = True  # False once a non-finite reference value was seen
        self.buffers = None

    def _buffers(self, count):
        if self.buffers is None or self.buffers[0].numel() < count:
            wide = {"dtype": torch.float64, "device": self.device}
            self.buffers = (torch.empty(count, **wide), torch.empty(count, **wide),
                            torch.empty(count, **wide), torch.empty(count, **wide),
                            torch.empty(count, dtype=torch.bool, device=self.device))
        return [buffer[:count] for buffer in self.buffers]

    def add(self, ref, cand):
        # A complex element is compared as its real and imaginary parts (adjacent in the
        # real view), and counted once: over the tolerance when either part is.
        parts = 2 if ref.is_complex() else 1
        if parts == 2:
            ref, cand = torch.view_as_real(ref).reshape(-1), torch.view_as_real(cand).reshape(-1)
        ref64, diff, magnitude, scratch, mask = self._buffers(ref.numel())
        ref64.copy_(ref)
        diff.copy_(cand).sub_(ref64).abs_()
        torch.abs(ref64, out=magnitude)
        total = float(diff.sum())
        if math.isfinite(total):  # the common case: no NaN, no infinity anywhere
            self.finite_sum += total
            self.finite_count += diff.numel()
            self.max_diff = max(self.max_diff, float(diff.max()))
            self.diff_squares += float(torch.dot(diff, diff))
            self._relative(diff, magnitude, scratch, finite_only=False)
        else:
            torch.eq(cand, ref, out=mask)  # equal infinities are no difference
            diff.masked_fill_(mask, 0.0)
            finite = torch.isfinite(diff)
            self.finite_sum += float(diff[finite].sum())
            self.finite_count += int(finite.sum())
            self.diff_squares += float(diff[finite].pow(2).sum())
            nan = torch.isnan(diff)
            self.nan_diff = self.nan_diff or bool(nan.any())
            others = diff[~nan]
            if others.numel():
                self.max_diff = max(self.max_diff, float(others.max()))
            self.ref_nan += int(torch.isnan(ref64).sum())
            self.cand_nan += int(torch.isnan(cand).sum()) if cand.is_floating_point() else 0
            self._relative(diff, magnitude, scratch, finite_only=True)
        squares = float(torch.dot(ref64, ref64))
        if not math.isfinite(squares):
            kept = ref64[torch.isfinite(ref64)]
            squares = float(torch.dot(kept, kept))
        self.ref_squares += squares
        self._interval(ref64)
        # scratch becomes the coarse bound, then the tolerance atol + rtol * |r|.
        torch.mul(magnitude, self.whole.coarse_rtol, out=scratch).add_(self.whole.coarse_atol)
        torch.gt(diff, scratch, out=mask)
        self.over_coarse += _count(mask if parts == 1 else mask.view(-1, 2).any(dim=1))
        torch.mul(magnitude, self.rtol, out=scratch).add_(self.atol)
        torch.le(diff, scratch, out=mask)
        self.within += _count(mask if parts == 1 else mask.view(-1, 2).all(dim=1))

    def _relative(self, diff, magnitude, scratch, finite_only):
        torch.clamp(magnitude, min=self.floor, out=scratch)
        torch.div(diff, scratch, out=scratch)
        if finite_only:
            kept = scratch[torch.isfinite(scratch)]
            if not kept.numel():
                return
            self.max_rel = max(self.max_rel, float(kept.max()))
            self.rel_sum += float(kept.sum())
            return
        self.max_rel = max(self.max_rel, float(scratch.max()))
        self.rel_sum += float(scratch.sum())

    def _interval(self, ref64):
        """The constants c with |c - r| <= atol + rtol*|r| for every r of the chunk:
        [max(r - tol(r)), min(r + tol(r))]. With rtol < 1 both are monotonic in r, so the
        extremes of r give them."""
        if self.rtol < 1:
            low, high = torch.aminmax(ref64)
            low, high = float(low), float(high)
            lo = high - (abs(high) * self.rtol + self.atol)
            hi = low + (abs(low) * self.rtol + self.atol)
        else:
            tolerance = ref64.abs().mul_(self.rtol).add_(self.atol)
            lo, hi = float((ref64 - tolerance).max()), float((ref64 + tolerance).min())
        if math.isnan(lo) or math.isnan(hi):  # an infinite or NaN reference value
            self.bounded = False
        else:
            self.lo, self.hi = max(self.lo, lo), min(self.hi, hi)

    def merge(self, other):
        """Adds the statistics of the slice that follows this one (`other`): the result
        is that of one pass over both, sums in a fixed order."""
        self.max_diff = max(self.max_diff, other.max_diff)
        self.nan_diff = self.nan_diff or other.nan_diff
        self.finite_sum += other.finite_sum
        self.finite_count += other.finite_count
        self.ref_nan += other.ref_nan
        self.cand_nan += other.cand_nan
        self.within += other.within
        self.over_coarse += other.over_coarse
        self.diff_squares += other.diff_squares
        self.ref_squares += other.ref_squares
        self.max_rel = max(self.max_rel, other.max_rel)
        self.rel_sum += other.rel_sum
        self.lo, self.hi = max(self.lo, other.lo), min(self.hi, other.hi)
        self.bounded = self.bounded and other.bounded

    def interval(self):
        if not self.bounded or self.lo > self.hi:
            return None
        return [self.lo, self.hi]

    def metrics(self, numel):
        diff_norm, ref_norm = math.sqrt(self.diff_squares), math.sqrt(self.ref_squares)
        if ref_norm > 0:
            rel_l2 = diff_norm / ref_norm
        else:
            rel_l2 = 0.0 if diff_norm == 0 else math.inf
        return {"max_abs_diff": math.nan if self.nan_diff else self.max_diff,
                "mean_abs_diff": self.finite_sum / self.finite_count if self.finite_count else math.inf,
                "rel_l2_error": rel_l2,
                "share_over_coarse": self.over_coarse / numel,
                "max_rel_error": math.nan if self.nan_diff else self.max_rel,
                "mean_rel_error": self.rel_sum / self.finite_count if self.finite_count else math.inf}

    def floored_rel_l2(self, numel):
        """RMS(c - r) / max(RMS(r), atol): the whole-output error, with the reference's
        RMS counted as at least the rule's atol (an output that is all rounding noise
        around zero is judged by the absolute tolerance, as per element)."""
        rms_diff = math.sqrt(self.diff_squares / numel)
        return rms_diff / max(math.sqrt(self.ref_squares / numel), self.atol, 1e-30)


def _count(mask):
    """True elements of a chunk's bool mask. Summed as bytes into an int32 (a chunk has
    far fewer than 2**31 elements): torch's bool sum is ~100x slower on the CPU, and
    was most of a comparison's time."""
    return int(mask.view(torch.uint8).sum(dtype=torch.int32))


class CandidateOutputError(Exception):
    """The candidate's process handed over an output the judge cannot read (a missing or
    short file, a link): the candidate's fault, since its process wrote it."""


def compare_leaf(ref, cand, rule, where="the output", workers=1, device=None):
    """Compares one reference leaf with one candidate leaf (outputs.FileLeaf or
    TensorLeaf). Raises CandidateOutputError for an unreadable candidate file; a reference
    file that cannot be read raises ValueError (the harness's own store is broken).
    `workers`: threads that compare contiguous slices of two file leaves at once (torch
    releases the GIL in its kernels; each thread reads its own slice of both files); the
    slices' statistics are merged in order, so a verdict does not depend on scheduling.
    `device`: an accelerator (torch.device) that compares file leaves of DEVICE_MIN_BYTES
    or more; one that runs out of memory leaves the comparison to the CPU."""
    if tuple(cand.shape) != tuple(ref.shape):
        return Outcome(protocol.SHAPE_MISMATCH,
                       f"{where} has shape {list(cand.shape)}, the reference's {list(ref.shape)}")
    if cand.dtype != ref.dtype:
        return Outcome(protocol.DTYPE_MISMATCH,
                       f"{where} has dtype {dtype_name(cand.dtype)}, the reference's "
                       f"{dtype_name(ref.dtype)}")
    if ref.numel == 0:
        return Outcome(intervals=[(0, None)])
    files = isinstance(ref, FileLeaf) and isinstance(cand, FileLeaf)
    if ref.device.type != "cpu" and cand.device == ref.device:
        # Both in the same device's memory (the task host's reference outputs and a
        # buffer lent to the candidate): compared where they are.
        return _compare(ref, cand, rule, where, 1, ref.device)
    if device is not None and files and ref.nbytes >= DEVICE_MIN_BYTES:
        try:
            return _compare(ref, cand, rule, where, workers, device)
        except Exception as exc:  # noqa: BLE001 - only the device's memory is retried
            if not _out_of_memory(exc):
                raise
    sliceable = getattr(ref, "sliceable", False) and getattr(cand, "sliceable", False)
    return _compare(ref, cand, rule, where, workers if sliceable else 1, None)


def _compare(ref, cand, rule, where, workers, device):
    atol, rtol = tolerance(rule, ref.dtype)
    whole = WholeOutput(rule, ref.dtype)
    chunk = CHUNK_ELEMENTS if device is None else DEVICE_CHUNK_ELEMENTS

    def one_pass(piece):
        stats = _Stats(atol, rtol, whole, device)
        _accumulate(stats, ref, cand, where, chunk, *piece)
        return stats

    slices = _slices(ref.numel, workers, chunk)
    if len(slices) == 1:
        stats = one_pass(slices[0])
    else:
        with ThreadPoolExecutor(len(slices), thread_name_prefix="compare") as pool:
            parts = list(pool.map(one_pass, slices))
        stats = parts[0]
        for part in parts[1:]:
            stats.merge(part)
    return _verdict(stats, rule, ref.numel, where)


def _out_of_memory(exc):
    oom = getattr(torch, "OutOfMemoryError", None) or getattr(torch.cuda, "OutOfMemoryError", None)
    return (oom is not None and isinstance(exc, oom)) or "out of memory" in str(exc)


def _slices(numel, workers, chunk=None):
    """[(start, count)]: `numel` elements cut into at most `workers` contiguous slices of
    whole chunks of `chunk` elements (default CHUNK_ELEMENTS), each at least
    MIN_CHUNKS_PER_WORKER chunks of CHUNK_ELEMENTS."""
    chunk = chunk or CHUNK_ELEMENTS
    count = max(1, min(workers, -(-numel // CHUNK_ELEMENTS) // MIN_CHUNKS_PER_WORKER))
    chunks = -(-numel // chunk)
    per_slice = -(-chunks // count) * chunk
    return [(start, min(per_slice, numel - start)) for start in range(0, numel, per_slice)]


def _accumulate(stats, ref, cand, where, chunk, start, count):
    """One pass over elements [start, start + count) of both leaves into `stats`, in
    chunks of `chunk` elements, on stats.device."""
    pinned = stats.device.type == "cuda"
    ref_handle = ref.open()
    try:
        try:
            cand_handle = cand.open()
        except ValueError as exc:
            raise CandidateOutputError(f"{where}: {exc}") from None
        try:
            cand_chunks = cand.chunks(cand_handle, chunk, start, count, pinned)
            for ref_chunk in ref.chunks(ref_handle, chunk, start, count, pinned):
                try:
                    cand_chunk = next(cand_chunks)
                except (ValueError, StopIteration) as exc:
                    raise CandidateOutputError(f"{where}: {exc or 'the file ended early'}") from None
                # The copies finish before the next chunk is read into the same buffers:
                # add() waits for the device's results.
                stats.add(ref_chunk.to(stats.device, non_blocking=pinned),
                          cand_chunk.to(stats.device, non_blocking=pinned))
        finally:
            if cand_handle is not None:
                cand_handle.close()
    finally:
        if ref_handle is not None:
            ref_handle.close()


def _verdict(stats, rule, numel, where):
    metrics = stats.metrics(numel)
    max_diff, mean_diff = metrics["max_abs_diff"], metrics["mean_abs_diff"]
    # NaN never passes: not in the candidate, and not in the reference either (a task whose
    # reference yields NaN cannot judge anyone; the reference worker rejects it first).
    if stats.ref_nan:
        return Outcome(protocol.NUMERICAL_MISMATCH,
                       f"the reference's {where} contains {stats.ref_nan} NaN value(s): NaN "
                       "never passes; fix the task's inputs", metrics)
    if stats.cand_nan:
        return Outcome(protocol.NUMERICAL_MISMATCH,
                       f"{where} contains {stats.cand_nan} NaN value(s) of {numel} "
                       "(the reference has none)", metrics)
    over = numel - stats.within
    text = (f"max abs diff {max_diff:.3g}, mean abs diff {mean_diff:.3g}, relative error of "
            f"the whole output {metrics['rel_l2_error']:.3g}, max relative error "
            f"{metrics['max_rel_error']:.3g}")
    kind = rule["kind"]
    if kind == "allclose" and over:
        return Outcome(protocol.NUMERICAL_MISMATCH,
                       f"{where}: {over} of {numel} elements differ beyond "
                       f"atol={stats.atol:g}, rtol={stats.rtol:g}; {text}", metrics)
    if kind == "max_abs_diff" and not max_diff < rule["limit"]:
        return Outcome(protocol.NUMERICAL_MISMATCH,
                       f"{where}: {text}, over the limit {rule['limit']:g}", metrics)
    if kind == "share_over_limit":
        share = over / numel
        if share > rule["max_share"]:
            return Outcome(protocol.NUMERICAL_MISMATCH,
                           f"{where}: {share:.2%} of elements differ beyond rtol={stats.rtol:g} "
                           f"(atol={stats.atol:g}), more than the {rule['max_share']:.2%} "
                           f"allowed; {text}", metrics)
    whole = stats.whole
    if whole.max_rel_l2 is not None:
        floored = stats.floored_rel_l2(numel)
        if not floored <= whole.max_rel_l2:
            return Outcome(protocol.NUMERICAL_MISMATCH,
                           f"{where} is off as a whole: its RMS error is {floored:.3g} of the "
                           f"reference's RMS (counted as at least atol={stats.atol:g}), over the "
                           f"bound max_rel_l2={whole.max_rel_l2:g}, although every element may be "
                           f"within the per-element tolerance; {text}", metrics)
    share = metrics["share_over_coarse"]
    if whole.max_coarse_share is not None and share > whole.max_coarse_share:
        return Outcome(protocol.NUMERICAL_MISMATCH,
                       f"{where}: {share:.2%} of elements are off by more than "
                       f"{whole.coarse_atol:g} + {whole.coarse_rtol:g}*|reference| (the coarse "
                       f"bound), more than the {whole.max_coarse_share:.2%} allowed; {text}",
                       metrics)
    return Outcome(metrics=metrics, intervals=[(numel, stats.interval())])


def compare_leaves(ref_leaves, cand_leaves, rule, names=None, workers=1, device=None):
    """Compares a forward's outputs leaf by leaf; the first failing leaf decides.
    `cand_leaves` items are leaves or, for outputs that are not tensors, the name of what
    they are (a string). `names`: what messages call each leaf (default "output #i");
    `workers`, `device`: see compare_leaf."""
    if len(ref_leaves) != len(cand_leaves):
        return Outcome(protocol.SHAPE_MISMATCH,
                       f"the reference returns {len(ref_leaves)} output(s), the candidate "
                       f"{len(cand_leaves)}")
    per_leaf, intervals = [], []
    for index, (ref, cand) in enumerate(zip(ref_leaves, cand_leaves)):
        where = (names[index] if names else f"output #{index}" if len(ref_leaves) > 1
                 else "the output")
        if isinstance(cand, str):
            return Outcome(protocol.DTYPE_MISMATCH,
                           f"{where} is a {cand}; the reference returns a tensor of "
                           f"{dtype_name(ref.dtype)}")
        outcome = compare_leaf(ref, cand, rule, where, workers, device)
        if not outcome.passed:
            return outcome
        intervals += outcome.intervals
        if outcome.metrics:  # none for an empty output: nothing to compare
            per_leaf.append(outcome.metrics)
    return Outcome(metrics=combined(per_leaf), intervals=intervals)


def combined(per_part):
    """TRIAL_METRICS of several outputs (or trials): the worst of each, the mean of the
    mean_* ones."""
    if not per_part:
        return {}
    return {name: (sum(part[name] for part in per_part) / len(per_part) if name.startswith("mean_")
                   else max(part[name] for part in per_part))
            for name in TRIAL_METRICS}


def _in_memory(values):
    return [TensorLeaf(t) if t is not None else None for t in map(as_tensor, flat_leaves(values))]


def _kind_name(value):
    return type(value).__name__


def compare_outputs(reference, candidate, rule):
    """compare_leaves for in-memory forward outputs (tensors, arrays, scalars)."""
    ref_leaves = _in_memory(reference)
    if any(leaf is None for leaf in ref_leaves):
        bad = next(v for v, leaf in zip(flat_leaves(reference), ref_leaves) if leaf is None)
        return Outcome(protocol.TASK_ERROR,
                       f"the reference returns a {_kind_name(bad)}, not a tensor")
    cand_values = flat_leaves(candidate)
    cand_leaves = [leaf if leaf is not None else _kind_name(value)
                   for leaf, value in zip(_in_memory(candidate), cand_values)]
    return compare_leaves(ref_leaves, cand_leaves, rule)


def compare_tensors(ref, cand, rule, where="the output"):
    return compare_leaf(TensorLeaf(ref), TensorLeaf(cand), rule, where)


def _extreme_interval(tensor, rule):
    """(numel, the constants c with |c - r| <= atol + rtol*|r| for every element r, or
    None): as _Stats._interval, from the tensor's minimum and maximum (exact in any dtype);
    with rtol >= 1 the bound is not monotonic in r, so the chunked comparison decides."""
    numel = tensor.numel()
    if numel == 0:
        return (0, None)
    atol, rtol = tolerance(rule, tensor.dtype)
    if rtol >= 1:
        return compare_leaf(TensorLeaf(tensor), TensorLeaf(tensor), rule).intervals[0]
    values = torch.view_as_real(tensor.resolve_conj()) if tensor.is_complex() else tensor
    low, high = math.inf, -math.inf
    # In pieces, widened where aminmax has no kernel (bool; half and bfloat16 on the CPU):
    # exact, and never a whole-tensor copy.
    for piece in pieces(values.detach(), 1 << 24):
        if piece.dtype in (torch.bool, torch.float16, torch.bfloat16):
            piece = piece.to(torch.float32)
        piece_low, piece_high = torch.aminmax(piece)
        low, high = min(low, float(piece_low)), max(high, float(piece_high))
    if not (math.isfinite(low) and math.isfinite(high)):
        return (numel, None)
    lo, hi = high - (abs(high) * rtol + atol), low + (abs(low) * rtol + atol)
    return (numel, [lo, hi] if lo <= hi else None)


class ConstantDetector:
    """Tells whether ONE constant value, returned for every output element, would have
    passed every trial so far. Then the comparison proves nothing about a candidate that
    passes (KernelBench issue #165: zero output on tasks whose reference is ~0), and the
    reference worker adds trials with varied inputs (reference.VARIATIONS) until it is
    not so.

    For each output leaf it keeps the interval of constants c that satisfy
    |c - r| <= atol + rtol*|r| for every element r seen: the per-element allowed
    intervals, intersected over elements (by the comparison, chunk by chunk) and trials
    (here). The output is near-constant when every leaf's interval is still non-empty.
    (For share_over_limit this ignores the allowed share, so it can only under-report.)
    A scalar output (a loss) counts the same way: one number per trial that hardly
    varies between trials (a mean over millions of random elements) is just as easy to
    return without computing anything."""

    def __init__(self, rule):
        self.rule = rule
        self.intervals = None  # per leaf: [lo, hi], or None once the leaf varies

    def merge(self, leaf_intervals):
        """Takes one trial's (numel, interval) per leaf (Outcome.intervals)."""
        if self.intervals is None:
            self.intervals = [[-math.inf, math.inf] for _ in leaf_intervals]
        for index, (numel, seen) in enumerate(leaf_intervals):
            interval = self.intervals[index]
            if interval is None or numel == 0:
                continue
            if seen is None:
                self.intervals[index] = None
                continue
            interval[0] = max(interval[0], seen[0])
            interval[1] = min(interval[1], seen[1])
            if interval[0] > interval[1]:
                self.intervals[index] = None

    def observe(self, reference):
        """merge() for an in-memory forward output (the reference's own, in the reference
        worker). Each leaf's interval comes from its extremes, found where the output lives
        (one reduction per leaf): comparing the output with itself would copy it to the
        host chunk by chunk and compute every statistic, minutes of CPU for KernelBench's
        GB-sized outputs."""
        intervals = []
        for leaf in _in_memory(reference):
            if leaf is None:
                raise ValueError("the output holds a value that is not a tensor")
            intervals.append(_extreme_interval(leaf.tensor, self.rule))
        self.merge(intervals)

    def constant(self):
        """A constant that would pass every trial for every output, or None."""
        if not self.intervals or any(i is None for i in self.intervals):
            return None
        lo, hi = self.intervals[0]
        return lo if math.isinf(hi) else hi if math.isinf(lo) else (lo + hi) / 2
