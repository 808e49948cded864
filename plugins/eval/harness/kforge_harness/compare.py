"""Comparing candidate outputs with reference outputs under a configurable rule, and
detecting references too constant for a comparison to prove anything.

Outputs are read in chunks of CHUNK_ELEMENTS elements (outputs.FileLeaf from the files
the reference worker and the candidate child wrote, or outputs.TensorLeaf in memory),
and each chunk is compared in float64 on the CPU: a difference of fp32 values is exact,
and the memory a comparison takes is a few times the chunk, whatever the output's size
(a 6 GB output once needed 12 GB of float64 temporaries on the device). The statistics
are accumulated over the chunks, so verdicts and metrics are those of one pass over the
whole output."""

import math

import torch

from . import protocol
from .outputs import TensorLeaf, as_tensor, dtype_name, flat_leaves

# About 16 bytes of float64 temporaries per element at a time: ~48 MB per comparison.
CHUNK_ELEMENTS = 1 << 21


def tolerance(rule, dtype):
    """(atol, rtol) for outputs of `dtype` under `rule`: integer and bool outputs must be
    exact; a floating dtype the rule does not list uses the float32 numbers."""
    if not (dtype.is_floating_point or dtype.is_complex):
        return 0.0, 0.0
    kind = rule["kind"]
    if kind == "allclose":
        name = dtype_name(dtype)
        return (float(rule["atol"].get(name, rule["atol"]["float32"])),
                float(rule["rtol"].get(name, rule["rtol"]["float32"])))
    if kind == "max_abs_diff":
        return rule["limit"], 0.0
    return rule["atol"], rule["rtol"]


class Outcome:
    """The verdict of one trial's comparison. `intervals`: per output leaf, (number of
    elements, the interval of constants that would have passed it, or None), for the
    near-constant detector; set when every leaf was compared."""

    def __init__(self, error_class="", message="", max_abs_diff=None, mean_abs_diff=None,
                 intervals=None):
        self.error_class = error_class
        self.message = message
        self.max_abs_diff = max_abs_diff
        self.mean_abs_diff = mean_abs_diff
        self.intervals = intervals or []

    @property
    def passed(self):
        return not self.error_class


class _Stats:
    """What one pass over a leaf pair accumulates, chunk by chunk. The float64 buffers are
    allocated once per leaf and reused for every chunk: fresh multi-MB allocations go back
    to the kernel when freed, and faulting their pages in again cost more than the
    arithmetic."""

    def __init__(self, atol, rtol):
        self.atol, self.rtol = atol, rtol
        self.max_diff = 0.0
        self.nan_diff = False
        self.finite_sum, self.finite_count = 0.0, 0
        self.ref_nan = self.cand_nan = 0
        self.within = 0  # elements with |c - r| <= atol + rtol * |r|
        self.lo, self.hi = -math.inf, math.inf  # constants that pass every element so far
        self.bounded = True  # False once a non-finite reference value was seen
        self.buffers = None

    def _buffers(self, count):
        if self.buffers is None or self.buffers[0].numel() < count:
            self.buffers = (torch.empty(count, dtype=torch.float64),
                            torch.empty(count, dtype=torch.float64),
                            torch.empty(count, dtype=torch.bool))
        return [buffer[:count] for buffer in self.buffers]

    def add(self, ref, cand):
        if ref.is_complex():
            ref, cand = torch.view_as_real(ref).reshape(-1), torch.view_as_real(cand).reshape(-1)
        ref64, diff, mask = self._buffers(ref.numel())
        ref64.copy_(ref)
        diff.copy_(cand).sub_(ref64).abs_()
        total = float(diff.sum())
        if math.isfinite(total):  # the common case: no NaN, no infinity anywhere
            self.finite_sum += total
            self.finite_count += diff.numel()
            self.max_diff = max(self.max_diff, float(diff.max()))
        else:
            torch.eq(cand, ref, out=mask)  # equal infinities are no difference
            diff.masked_fill_(mask, 0.0)
            finite = torch.isfinite(diff)
            self.finite_sum += float(diff[finite].sum())
            self.finite_count += int(finite.sum())
            nan = torch.isnan(diff)
            self.nan_diff = self.nan_diff or bool(nan.any())
            others = diff[~nan]
            if others.numel():
                self.max_diff = max(self.max_diff, float(others.max()))
            self.ref_nan += int(torch.isnan(ref64).sum())
            self.cand_nan += int(torch.isnan(cand).sum()) if cand.is_floating_point() else 0
        self._interval(ref64)
        # ref64 becomes the tolerance: atol + rtol * |r|.
        torch.le(diff, ref64.abs_().mul_(self.rtol).add_(self.atol), out=mask)
        self.within += int(mask.sum())

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

    def interval(self):
        if not self.bounded or self.lo > self.hi:
            return None
        return [self.lo, self.hi]

    @property
    def max_abs_diff(self):
        return math.nan if self.nan_diff else self.max_diff

    @property
    def mean_abs_diff(self):
        return self.finite_sum / self.finite_count if self.finite_count else math.inf


class CandidateOutputError(Exception):
    """The candidate's process handed over an output the judge cannot read (a missing or
    short file, a link): the candidate's fault, since its process wrote it."""


def compare_leaf(ref, cand, rule, where="the output"):
    """Compares one reference leaf with one candidate leaf (outputs.FileLeaf or
    TensorLeaf). Raises CandidateOutputError for an unreadable candidate file; a reference
    file that cannot be read raises ValueError (the harness's own store is broken)."""
    if tuple(cand.shape) != tuple(ref.shape):
        return Outcome(protocol.SHAPE_MISMATCH,
                       f"{where} has shape {list(cand.shape)}, the reference's {list(ref.shape)}")
    if cand.dtype != ref.dtype:
        return Outcome(protocol.DTYPE_MISMATCH,
                       f"{where} has dtype {dtype_name(cand.dtype)}, the reference's "
                       f"{dtype_name(ref.dtype)}")
    if ref.numel == 0:
        return Outcome(intervals=[(0, None)])
    atol, rtol = tolerance(rule, ref.dtype)
    stats = _Stats(atol, rtol)
    ref_handle = ref.open()
    try:
        try:
            cand_handle = cand.open()
        except ValueError as exc:
            raise CandidateOutputError(f"{where}: {exc}") from None
        try:
            cand_chunks = cand.chunks(cand_handle, CHUNK_ELEMENTS)
            for ref_chunk in ref.chunks(ref_handle, CHUNK_ELEMENTS):
                try:
                    cand_chunk = next(cand_chunks)
                except (ValueError, StopIteration) as exc:
                    raise CandidateOutputError(f"{where}: {exc or 'the file ended early'}") from None
                stats.add(ref_chunk, cand_chunk)
        finally:
            if cand_handle is not None:
                cand_handle.close()
    finally:
        if ref_handle is not None:
            ref_handle.close()
    return _verdict(stats, rule, ref.numel, where)


def _verdict(stats, rule, numel, where):
    max_diff, mean_diff = stats.max_abs_diff, stats.mean_abs_diff
    # NaN never passes: not in the candidate, and not in the reference either (a task whose
    # reference yields NaN cannot judge anyone; the reference worker rejects it first).
    if stats.ref_nan:
        return Outcome(protocol.NUMERICAL_MISMATCH,
                       f"the reference's {where} contains {stats.ref_nan} NaN value(s): NaN "
                       "never passes; fix the task's inputs", max_diff, mean_diff)
    if stats.cand_nan:
        return Outcome(protocol.NUMERICAL_MISMATCH,
                       f"{where} contains {stats.cand_nan} NaN value(s) of {numel} "
                       "(the reference has none)", max_diff, mean_diff)
    over = numel - stats.within
    text = f"max abs diff {max_diff:.3g}, mean abs diff {mean_diff:.3g}"
    kind = rule["kind"]
    if kind == "allclose" and over:
        return Outcome(protocol.NUMERICAL_MISMATCH,
                       f"{where}: {over} of {numel} elements differ beyond "
                       f"atol={stats.atol:g}, rtol={stats.rtol:g}; {text}", max_diff, mean_diff)
    if kind == "max_abs_diff" and not max_diff < rule["limit"]:
        return Outcome(protocol.NUMERICAL_MISMATCH,
                       f"{where}: {text}, over the limit {rule['limit']:g}", max_diff, mean_diff)
    if kind == "share_over_limit":
        share = over / numel
        if share > rule["max_share"]:
            return Outcome(protocol.NUMERICAL_MISMATCH,
                           f"{where}: {share:.2%} of elements differ beyond rtol={stats.rtol:g} "
                           f"(atol={stats.atol:g}), more than the {rule['max_share']:.2%} "
                           f"allowed; {text}", max_diff, mean_diff)
    return Outcome(max_abs_diff=max_diff, mean_abs_diff=mean_diff,
                   intervals=[(numel, stats.interval())])


def compare_leaves(ref_leaves, cand_leaves, rule, names=None):
    """Compares a forward's outputs leaf by leaf; the first failing leaf decides.
    `cand_leaves` items are leaves or, for outputs that are not tensors, the name of what
    they are (a string). `names`: what messages call each leaf (default "output #i")."""
    if len(ref_leaves) != len(cand_leaves):
        return Outcome(protocol.SHAPE_MISMATCH,
                       f"the reference returns {len(ref_leaves)} output(s), the candidate "
                       f"{len(cand_leaves)}")
    worst_max, mean_sum, compared, intervals = 0.0, 0.0, 0, []
    for index, (ref, cand) in enumerate(zip(ref_leaves, cand_leaves)):
        where = (names[index] if names else f"output #{index}" if len(ref_leaves) > 1
                 else "the output")
        if isinstance(cand, str):
            return Outcome(protocol.DTYPE_MISMATCH,
                           f"{where} is a {cand}; the reference returns a tensor of "
                           f"{dtype_name(ref.dtype)}")
        outcome = compare_leaf(ref, cand, rule, where)
        if not outcome.passed:
            return outcome
        intervals += outcome.intervals
        if outcome.max_abs_diff is not None:  # None: an empty output, nothing to compare
            worst_max = max(worst_max, outcome.max_abs_diff)
            mean_sum += outcome.mean_abs_diff
            compared += 1
    return Outcome(max_abs_diff=worst_max, mean_abs_diff=mean_sum / max(1, compared),
                   intervals=intervals)


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


class ConstantDetector:
    """Tells whether ONE constant value, returned for every output element, would have
    passed every trial so far. Then the comparison proves nothing about a candidate that
    passes (KernelBench issue #165: zero output on tasks whose reference is ~0).

    For each output leaf it keeps the interval of constants c that satisfy
    |c - r| <= atol + rtol*|r| for every element r seen: the per-element allowed
    intervals, intersected over elements (by the comparison, chunk by chunk) and trials
    (here). The task is degenerate when every leaf's interval is still non-empty. (For
    share_over_limit this ignores the allowed share, so it can only under-report.)

    `elementwise` tells the two ways a reference gets there. Outputs with many elements
    that are all (nearly) the same value are KernelBench #165's pattern: the operators
    erase the input. Scalar outputs are different: a loss over millions of random
    elements is nearly the same number in every trial (law of large numbers), although it
    does depend on the input; rejecting correct kernels for that would be wrong."""

    def __init__(self, rule):
        self.rule = rule
        self.intervals = None  # per leaf: [lo, hi], or None once the leaf varies
        self.elementwise = False  # some output has more than one element

    def merge(self, leaf_intervals):
        """Takes one trial's (numel, interval) per leaf (Outcome.intervals)."""
        if self.intervals is None:
            self.intervals = [[-math.inf, math.inf] for _ in leaf_intervals]
        for index, (numel, seen) in enumerate(leaf_intervals):
            interval = self.intervals[index]
            if interval is None or numel == 0:
                continue
            self.elementwise = self.elementwise or numel > 1
            if seen is None:
                self.intervals[index] = None
                continue
            interval[0] = max(interval[0], seen[0])
            interval[1] = min(interval[1], seen[1])
            if interval[0] > interval[1]:
                self.intervals[index] = None

    def observe(self, reference):
        """merge() for an in-memory forward output (the reference against itself)."""
        self.merge(compare_outputs(reference, reference, self.rule).intervals)

    def constant(self):
        """A constant that would pass every trial for every output, or None."""
        if not self.intervals or any(i is None for i in self.intervals):
            return None
        lo, hi = self.intervals[0]
        return lo if math.isinf(hi) else hi if math.isinf(lo) else (lo + hi) / 2
