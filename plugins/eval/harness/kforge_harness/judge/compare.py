"""Comparing candidate outputs with reference outputs under a configurable rule (per
element, and over the whole output: its relative error, and how well it reproduces the
part of the reference's output that varies), and telling whether a reference's outputs
carry information a comparison can judge at all.

Outputs are read in chunks of CHUNK_ELEMENTS elements (outputs.TensorLeaf), and each
chunk is compared in float64: a difference of fp32 values is exact, and the memory a
comparison takes is a few times the chunk, whatever the output's size (a 6 GB output
once needed 12 GB of float64 temporaries on the device). The statistics are accumulated
over the chunks, so verdicts and metrics are those of one pass over the whole output.

Leaves on one accelerator (the task host's reference outputs and the buffer it lent the
candidate) are compared there: on a CUDA device by one fused kernel per chunk of
fused.CHUNK_ELEMENTS (judge/fused.py), elsewhere or where it cannot run by the torch
operations in chunks of DEVICE_CHUNK_ELEMENTS; a device out of memory leaves the
comparison to the CPU. The arithmetic is the same float64 arithmetic; only the order in
which sums are added differs, within float64 rounding."""

import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch

from kforge_harness import protocol
from kforge_harness.judge import fused
from kforge_harness.judge.outputs import TensorLeaf, as_tensor, dtype_name, flat_leaves

# 64K elements: the chunk's float64 temporaries (five buffers, ~2.2 MB) stay in the CPU's
# cache across the dozen passes the statistics make over them. Measured on the 2-core VM:
# 2.2 ms/MB of CPU against 27 ms/MB with 2M-element chunks, whose buffers (64 MB) are
# streamed from memory by every pass.
CHUNK_ELEMENTS = 1 << 16

# A leaf compared by several workers is cut into contiguous slices of at least this
# many chunks each: below it a thread's start-up costs more than its share of the work.
MIN_CHUNKS_PER_WORKER = 64

# On a device, chunks of 16M elements: the chunk's float64 buffers take 0.5 GB of device
# memory, and each chunk costs a dozen synchronisations (the statistics read back): a
# 6.4 GB output is 100 chunks.
DEVICE_CHUNK_ELEMENTS = 1 << 24

# The judge's statistics of one trial, as metrics (PROTOCOL.md): per output, then the
# worst output (for mean_*: the mean over outputs); over trials, the worst trial (for
# mean_*: the mean over trials).
# centered_rel_error is absent where the variation check did not judge (an output that
# varies less than its floor, an integer output, an infinite reference value).
TRIAL_METRICS = ("max_abs_diff", "mean_abs_diff", "rel_l2_error", "centered_rel_error",
                 "share_over_coarse", "max_rel_error", "mean_rel_error")

# The key under which compare_leaf hands a leaf's reference facts (its centre and
# rounding noise, see compare_leaf) to the statistics and the verdict, with the rule.
_FACTS = "reference_facts"


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
    ||c - r|| / ||r||; `max_centered`, the bound on ||c - r|| / ||r - centre|| (the
    variation check), and `variation_floor`, the variation (relative to ||r||) below which
    the dtype carries no information (protocol.VARIATION_FLOOR). Integer and bool outputs
    are exact: none of the relative checks."""

    def __init__(self, rule, dtype):
        exact = not (dtype.is_floating_point or dtype.is_complex)
        self.exact = exact
        self.coarse_atol = 0.0 if exact else _per_dtype(
            rule.get("coarse_atol"), dtype, _per_dtype(protocol.COARSE_BOUND["coarse_atol"], dtype))
        self.coarse_rtol = 0.0 if exact else _per_dtype(
            rule.get("coarse_rtol"), dtype, _per_dtype(protocol.COARSE_BOUND["coarse_rtol"], dtype))
        self.max_coarse_share = _per_dtype(rule.get("max_coarse_share"), dtype)
        self.max_rel_l2 = None if exact else _per_dtype(rule.get("max_rel_l2"), dtype)
        self.max_centered = None if exact else _per_dtype(rule.get("max_centered_rel_error"), dtype)
        self.variation_floor = 0.0 if exact else _per_dtype(protocol.VARIATION_FLOOR, dtype)

    def floor(self, ref_norm, noise):
        """The error no output of this magnitude and rounding noise can be asked to stay
        below, and the variation that is no information: variation_floor of ||r||, or
        NOISE_FACTOR times the reference's measured rounding noise."""
        return max(self.variation_floor * ref_norm, protocol.NOISE_FACTOR * noise)


class Outcome:
    """The verdict of one trial's comparison. `metrics`: TRIAL_METRICS (absent when
    nothing was compared)."""

    def __init__(self, error_class="", message="", metrics=None):
        self.error_class = error_class
        self.message = message
        self.metrics = metrics or {}

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
        # The reference's spread, per part (real and imaginary apart): count, mean and sum
        # of squared deviations, merged chunk by chunk (Chan et al.). None once a
        # reference value is not finite.
        self.spread = _Spread()
        self.buffers = None
        self.parameters = None  # the tolerances on the device, for judge/fused.py

    def _buffers(self, count):
        if self.buffers is None or self.buffers[0].numel() < count:
            wide = {"dtype": torch.float64, "device": self.device}
            self.buffers = (torch.empty(count, **wide), torch.empty(count, **wide),
                            torch.empty(count, **wide), torch.empty(count, **wide),
                            torch.empty(count, dtype=torch.bool, device=self.device))
        return [buffer[:count] for buffer in self.buffers]

    def _differences(self, ref, cand):
        """A chunk in float64: (parts, ref64, |c - r|, |r|, scratch, mask), the last two
        buffers of its size. A complex element is compared as its real and imaginary parts
        (adjacent in the real view), and counted once: over the tolerance when either
        part is."""
        parts = 2 if ref.is_complex() else 1
        if parts == 2:
            ref, cand = torch.view_as_real(ref).reshape(-1), torch.view_as_real(cand).reshape(-1)
        ref64, diff, magnitude, scratch, mask = self._buffers(ref.numel())
        ref64.copy_(ref)
        diff.copy_(cand).sub_(ref64).abs_()
        if not (ref.is_floating_point() or ref.is_complex()):
            # Integers: float64 keeps |c - r|'s magnitude (a difference in int64 can wrap,
            # and -2**63 stays negative under abs) but not low bits beyond 2**53, so an
            # element that differs at all differs by at least 1.
            torch.ne(cand, ref, out=mask)
            scratch.copy_(mask)
            torch.maximum(diff, scratch, out=diff)
        torch.abs(ref64, out=magnitude)
        return parts, ref64, diff, magnitude, scratch, mask

    def _tolerance_counts(self, parts, diff, magnitude, scratch, mask):
        """(elements over the coarse bound, elements within atol + rtol * |r|), as
        tensors; `scratch` and `mask` are overwritten."""
        torch.mul(magnitude, self.whole.coarse_rtol, out=scratch).add_(self.whole.coarse_atol)
        torch.gt(diff, scratch, out=mask)
        over = _counted(mask if parts == 1 else mask.view(-1, 2).any(dim=1))
        torch.mul(magnitude, self.rtol, out=scratch).add_(self.atol)
        torch.le(diff, scratch, out=mask)
        return over, _counted(mask if parts == 1 else mask.view(-1, 2).all(dim=1))

    def add(self, ref, cand):
        parts, ref64, diff, magnitude, scratch, mask = self._differences(ref, cand)
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
        if self.spread is not None:
            self.spread = self.spread.merged(_Spread.of_chunk(ref64, scratch, parts))
        over, within = self._tolerance_counts(parts, diff, magnitude, scratch, mask)
        self.over_coarse += int(over)
        self.within += int(within)

    def measure(self, ref, cand):
        """add()'s work on a chunk whose values are all finite, without waiting for the
        device: (its element count, its numbers as one float64 tensor on the chunk's
        device) for fold(). The numbers: the sums of |c - r|, |c - r|^2, the relative
        errors and r^2, the counts over the coarse bound and within the tolerance, the
        maxima of |c - r| and of the relative error, then per part the spread's shift
        and the sum and sum of squares of r less the shift (_Spread.chunk_sums). A device answers each wait in
        tens of microseconds, and add() waits a dozen times per chunk: on a GPU that was
        most of a comparison's time. On a CUDA device one fused kernel does the work
        (judge/fused.py), where it applies."""
        if fused.applies(ref, cand):
            if self.parameters is None:
                self.parameters = fused.tolerances(ref.device, self.atol, self.rtol, self.floor,
                                               self.whole.coarse_atol, self.whole.coarse_rtol)
            row = fused.measure(ref, cand, self.parameters)
            if row is not None:
                return ref.numel(), row
        parts, ref64, diff, magnitude, scratch, mask = self._differences(ref, cand)
        values = [diff.sum(), torch.dot(diff, diff)]
        torch.clamp(magnitude, min=self.floor, out=scratch)
        torch.div(diff, scratch, out=scratch)
        max_rel, rel_sum = scratch.max(), scratch.sum()
        values += [rel_sum, torch.dot(ref64, ref64)]
        spread = _Spread.chunk_sums(ref64, scratch, parts)
        values += self._tolerance_counts(parts, diff, magnitude, scratch, mask)
        values += [diff.max(), max_rel, *spread[1:]]
        return diff.numel(), torch.stack([v.to(torch.float64) for v in values])

    def fold(self, measured):
        """Adds measure()'s chunks, in order, exactly as add() would have; False (and
        nothing to be trusted in this object) when a chunk held a value that is not
        finite: add() must measure those."""
        rows = torch.stack([row for _, row in measured]).tolist() if measured else []
        for (numel, _), row in zip(measured, rows):
            total, diff_squares, rel_sum, squares, over, within, max_diff, max_rel = row[:8]
            if not (math.isfinite(total) and math.isfinite(squares)):
                return False
            self.finite_sum += total
            self.finite_count += numel
            self.max_diff = max(self.max_diff, max_diff)
            self.diff_squares += diff_squares
            self.max_rel = max(self.max_rel, max_rel)
            self.rel_sum += rel_sum
            self.ref_squares += squares
            if self.spread is not None:
                parts = len(row[8:]) // 3
                self.spread = self.spread.merged(_Spread.of_sums(numel // parts, *row[8:]))
            self.over_coarse += int(over)
            self.within += int(within)
        return True

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
        self.spread = (self.spread.merged(other.spread)
                       if self.spread is not None and other.spread is not None else None)

    def norms(self):
        """(||c - r||, ||r||) over the finite elements."""
        return math.sqrt(self.diff_squares), math.sqrt(self.ref_squares)

    def variation(self, centre):
        """||r - centre|| (None where a reference value is not finite); `centre`: the
        reference side's (compare_leaf), else the output's own mean."""
        return None if self.spread is None else self.spread.around(centre)

    def metrics(self, numel, facts):
        diff_norm, ref_norm = self.norms()
        metrics = {"max_abs_diff": math.nan if self.nan_diff else self.max_diff,
                   "mean_abs_diff": self.finite_sum / self.finite_count if self.finite_count else math.inf,
                   "rel_l2_error": _ratio(diff_norm, ref_norm),
                   "share_over_coarse": self.over_coarse / numel,
                   "max_rel_error": math.nan if self.nan_diff else self.max_rel,
                   "mean_rel_error": self.rel_sum / self.finite_count if self.finite_count else math.inf}
        variation = self.informative_variation(facts)
        if variation is not None:
            metrics["centered_rel_error"] = diff_norm / variation
        return metrics

    def informative_variation(self, facts):
        """||r - centre|| where the variation check judges this output: a floating-point
        output whose variation is above its floor (WholeOutput.floor), so information;
        else None (an output that varies less is judged by the rest of the rule: no
        comparison can tell it from a constant)."""
        if self.whole.max_centered is None:
            return None
        variation = self.variation(facts.get("centre"))
        floor = self.whole.floor(self.norms()[1], facts.get("noise", 0.0))
        return variation if variation is not None and variation > floor else None


class _Spread:
    """Count, mean and sum of squared deviations of a reference's values, per part (one
    for real outputs; real and imaginary parts for complex ones), in float64. A chunk's
    are taken about its first value, so that the variation of a near-constant output
    (1000 + 1e-4 x) is not lost to cancellation; chunks and slices merge in order (Chan,
    Golub and LeVeque's pairwise update)."""

    def __init__(self, count=0, means=(), squares=()):
        self.count, self.means, self.squares = count, list(means), list(squares)

    @classmethod
    def of_chunk(cls, ref64, scratch, parts):
        """The spread of a chunk (ref64, float64, real view), or None where one of its
        values is not finite. `scratch`: a buffer of the chunk's size."""
        return cls.of_sums(*(float(v) for v in cls.chunk_sums(ref64, scratch, parts)))

    @staticmethod
    def chunk_sums(ref64, scratch, parts):
        """[count, then per part: shift, sum and sum of squares of the values less the
        shift]: the count a number, the rest tensors on the chunk's device (nothing waits
        for the device)."""
        values, shifted = ref64.view(-1, parts), scratch.view(-1, parts)
        shift = values[0].clone()
        torch.sub(values, shift, out=shifted)
        sums = [values.shape[0]]
        for part in range(parts):
            column = shifted[:, part]
            sums += [shift[part], column.sum(), torch.dot(column, column)]
        return sums

    @classmethod
    def of_sums(cls, count, *per_part):
        """The spread from chunk_sums()'s values, or None where one is not finite."""
        count = int(count)
        means, squares = [], []
        for part in range(0, len(per_part), 3):
            shift, total, square = per_part[part:part + 3]
            if not (math.isfinite(total) and math.isfinite(square)):
                return None
            means.append(shift + total / count)
            squares.append(max(0.0, square - total * total / count))
        return cls(count, means, squares)

    def merged(self, other):
        """The spread of both (None when either is)."""
        if other is None:
            return None
        if not self.count or not other.count:
            return other if not self.count else self
        count = self.count + other.count
        means, squares = [], []
        for mine, theirs, my_squares, their_squares in zip(self.means, other.means,
                                                           self.squares, other.squares):
            delta = theirs - mine
            means.append(mine + delta * other.count / count)
            squares.append(my_squares + their_squares + delta * delta * self.count * other.count / count)
        return _Spread(count, means, squares)

    def around(self, centre=None):
        """||values - centre|| (the sum over parts): about the values' own mean when
        `centre` is None; `centre` is a number, or [real, imaginary] for complex values."""
        if not self.count:
            return 0.0
        if centre is None:
            return math.sqrt(sum(self.squares))
        centres = centre if isinstance(centre, (list, tuple)) else [centre]
        if len(centres) != len(self.means):
            raise ValueError(f"a centre of {len(centres)} part(s) for values of {len(self.means)}")
        return math.sqrt(sum(squares + self.count * (mean - float(c)) ** 2
                             for squares, mean, c in zip(self.squares, self.means, centres)))

    def centre(self):
        """The mean, as a number (or [real, imaginary]): what `around` takes."""
        return self.means[0] if len(self.means) == 1 else list(self.means)


def _ratio(numerator, denominator):
    if denominator > 0:
        return numerator / denominator
    return 0.0 if numerator == 0 else math.inf


def _counted(mask):
    """True elements of a chunk's bool mask, as a tensor. Summed as bytes into an int32 (a
    chunk has far fewer than 2**31 elements): torch's bool sum is ~100x slower on the
    CPU, and was most of a comparison's time."""
    return mask.view(torch.uint8).sum(dtype=torch.int32)


def compare_leaf(ref, cand, rule, where="the output", workers=1, facts=None):
    """Compares one reference leaf with one candidate leaf (outputs.TensorLeaf, or a
    SnapshotLeaf for a buffer the candidate can write). Leaves on one accelerator are
    compared there (a device out of memory leaves it to the CPU); elsewhere `workers`
    threads compare contiguous slices of two contiguous leaves at once (torch releases
    the GIL in its kernels); the slices' statistics are merged in order, so a verdict
    does not depend on scheduling.
    `facts`: what the reference side measured of this leaf (OutputInformation), a dict:
    "centre", the mean of the reference's values over its trials (a number, [real,
    imaginary] for complex), which the variation check measures the variation around
    (default: this output's own mean; a scalar output, a loss, varies only across
    trials); "noise", ||r - r'|| for r' the reference's output at inputs moved by an ulp
    (compare.perturbed), which loosens the whole-output bounds to NOISE_FACTOR times it
    (default 0)."""
    rule = dict(rule, **{_FACTS: facts or {}})
    if tuple(cand.shape) != tuple(ref.shape):
        return Outcome(protocol.SHAPE_MISMATCH,
                       f"{where} has shape {list(cand.shape)}, the reference's {list(ref.shape)}")
    if cand.dtype != ref.dtype:
        return Outcome(protocol.DTYPE_MISMATCH,
                       f"{where} has dtype {dtype_name(cand.dtype)}, the reference's "
                       f"{dtype_name(ref.dtype)}")
    if ref.numel == 0:
        return Outcome()
    if ref.device.type != "cpu" and cand.device == ref.device:
        try:
            return _compare(ref, cand, rule, where, 1, ref.device)
        except Exception as exc:  # noqa: BLE001 - only the device's memory is retried
            if not _out_of_memory(exc):
                raise
    sliceable = ref.sliceable and cand.sliceable
    return _compare(ref, cand, rule, where, workers if sliceable else 1, None)


def _compare(ref, cand, rule, where, workers, device):
    return _verdict(_statistics(ref, cand, rule, workers, device), rule, ref.numel, where)


def _statistics(ref, cand, rule, workers, device):
    """One pass over both leaves: their _Stats."""
    atol, rtol = tolerance(rule, ref.dtype)
    whole = WholeOutput(rule, ref.dtype)
    if device is None:
        chunk = CHUNK_ELEMENTS
    else:
        chunk = fused.CHUNK_ELEMENTS if fused.usable(device, ref.dtype) else DEVICE_CHUNK_ELEMENTS

    def one_pass(piece):
        # On a device, chunks are measured without waiting for it (_accumulate); on the
        # CPU nothing waits, and add() costs less than measure()'s bookkeeping.
        if device is not None:
            stats = _Stats(atol, rtol, whole, device)
            if _accumulate(stats, ref, cand, chunk, *piece):
                return stats
        stats = _Stats(atol, rtol, whole, device)
        _accumulate_each(stats, ref, cand, chunk, *piece)
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
    return stats


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


def _accumulate(stats, ref, cand, chunk, start, count):
    """One pass over elements [start, start + count) of both leaves into `stats`, in
    chunks of `chunk` elements, on stats.device (a chunk of a leaf elsewhere is copied
    there); False, with `stats` spoilt, where a value was not finite (measure())."""
    cand_chunks = cand.chunks(chunk, start, count)
    measured = [stats.measure(ref_chunk.to(stats.device), next(cand_chunks).to(stats.device))
                for ref_chunk in ref.chunks(chunk, start, count)]
    return stats.fold(measured)


def _accumulate_each(stats, ref, cand, chunk, start, count):
    """_accumulate() chunk by chunk with add(), which handles NaN and infinities."""
    cand_chunks = cand.chunks(chunk, start, count)
    for ref_chunk in ref.chunks(chunk, start, count):
        stats.add(ref_chunk.to(stats.device), next(cand_chunks).to(stats.device))


def _verdict(stats, rule, numel, where):
    facts = rule.get(_FACTS) or {}
    metrics = stats.metrics(numel, facts)
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
    forgiven = _within_integer_noise(stats, facts, numel) if over else None
    if forgiven:
        over = 0
    text = (f"max abs diff {max_diff:.3g}, mean abs diff {mean_diff:.3g}, relative error of "
            f"the whole output {metrics['rel_l2_error']:.3g}, max relative error "
            f"{metrics['max_rel_error']:.3g}")
    if forgiven is False:
        return Outcome(protocol.NUMERICAL_MISMATCH,
                       f"{where}: {numel - stats.within} of {numel} elements differ; an integer "
                       f"output must be exact, or, where the reference's own output moves when "
                       f"its inputs move by an ulp (an integer made from floating-point values: "
                       f"a rounding, an argmax), within what that rounding noise allows: "
                       f"||c - r|| <= {protocol.NOISE_FACTOR:g} * {facts['noise']:.3g} and at most "
                       f"{_moved_allowance(facts['moved'])} elements off ({protocol.NOISE_MOVED_FACTOR} "
                       f"times the {facts['moved']} the ulp moved, plus {protocol.NOISE_MOVED_SLACK}); "
                       f"{text}", metrics)
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
    failed = _whole_output_failure(stats, facts, metrics, where, text, forgiven)
    if failed is not None:
        return Outcome(protocol.NUMERICAL_MISMATCH, failed, metrics)
    return Outcome(metrics=metrics)


def _within_integer_noise(stats, facts, numel):
    """For an integer or bool output the candidate does not match exactly: None where the
    reference measured no rounding noise of this output (it is exact: a count, an index
    computed from integers), else whether the difference is within what that noise allows:
    ||c - r|| within NOISE_FACTOR times it as a whole, and no more elements off than
    NOISE_MOVED_FACTOR times those it moved plus NOISE_MOVED_SLACK. An integer made from
    floating-point values (a rounding, a quantisation, an argmax of a float reduction)
    moves where an honest kernel sums in another order, as the reference's moves at
    inputs moved by an ulp."""
    noise, moved = facts.get("noise") or 0.0, facts.get("moved") or 0
    if not stats.whole.exact or not noise > 0 or not moved > 0:
        return None
    diff_norm, _ = stats.norms()
    return (diff_norm <= protocol.NOISE_FACTOR * noise
            and numel - stats.within <= _moved_allowance(moved))


def _moved_allowance(moved):
    return protocol.NOISE_MOVED_FACTOR * moved + protocol.NOISE_MOVED_SLACK


def _whole_output_failure(stats, facts, metrics, where, text, forgiven=None):
    """The message of the first whole-output check the leaf fails, or None. `forgiven`:
    an integer output's differences are within the reference's rounding noise
    (_within_integer_noise), whose count bound then stands for the coarse share (an
    integer's coarse bound is 0: every element off by one would count)."""
    whole = stats.whole
    diff_norm, ref_norm = stats.norms()
    noise = facts.get("noise", 0.0)
    noise_text = (f", or {protocol.NOISE_FACTOR:g} times the reference's own rounding noise "
                  f"{noise:.3g}" if noise else "")
    # An all-zero reference has no magnitude to be relative to: the rest of the rule judges it.
    if whole.max_rel_l2 is not None and ref_norm > 0:
        allowed = max(whole.max_rel_l2 * ref_norm, protocol.NOISE_FACTOR * noise)
        if not diff_norm <= allowed:
            return (f"{where} is off as a whole: ||c - r|| / ||r|| = {metrics['rel_l2_error']:.3g}, "
                    f"over max_rel_l2={whole.max_rel_l2:g}{noise_text}, although every element "
                    "may be within the per-element tolerance. That is the error of a result "
                    "computed or stored in a lower precision (rounding a float32 output to "
                    "bfloat16 alone is 1.1e-3 to 2e-3 of it at any magnitude; honest float32 "
                    "kernels stay below 2e-4) or of a result computed on part of its input: "
                    f"compute and accumulate in the output's precision; {text}")
    centered = metrics.get("centered_rel_error")
    if centered is not None and not centered <= whole.max_centered:
        return (f"{where} does not reproduce how the reference's output varies: its error "
                f"||c - r|| = {diff_norm:.3g} is {centered:.3g} of the reference's variation "
                f"||r - centre|| = {stats.informative_variation(facts):.3g} (centered_rel_error), "
                f"over max_centered_rel_error={whole.max_centered:g}. A constant, or an output that "
                "follows the reference's only in part (flattened, or computed from a sample "
                "of the input), fails here even where it is close to the reference relative "
                f"to its magnitude; {text}")
    share = metrics["share_over_coarse"]
    if whole.max_coarse_share is not None and share > whole.max_coarse_share and not forgiven:
        return (f"{where}: {share:.2%} of elements are off by more than {whole.coarse_atol:g} + "
                f"{whole.coarse_rtol:g}*|reference| (the coarse bound), more than the "
                f"{whole.max_coarse_share:.2%} allowed; {text}")
    return None


def compare_leaves(ref_leaves, cand_leaves, rule, names=None, workers=1, facts=None):
    """Compares a forward's outputs leaf by leaf; the first failing leaf decides.
    `cand_leaves` items are leaves or, for outputs that are not tensors, the name of what
    they are (a string). `names`: what messages call each leaf (default "output #i");
    `workers`: see compare_leaf; `facts`: per leaf, compare_leaf's `facts` (a
    dict, which may hold other keys too: the leaves' descriptions in the store)."""
    if len(ref_leaves) != len(cand_leaves):
        return Outcome(protocol.SHAPE_MISMATCH,
                       f"the reference returns {len(ref_leaves)} output(s), the candidate "
                       f"{len(cand_leaves)}")
    per_leaf = []
    for index, (ref, cand) in enumerate(zip(ref_leaves, cand_leaves)):
        where = (names[index] if names else f"output #{index}" if len(ref_leaves) > 1
                 else "the output")
        if isinstance(cand, str):
            return Outcome(protocol.DTYPE_MISMATCH,
                           f"{where} is a {cand}; the reference returns a tensor of "
                           f"{dtype_name(ref.dtype)}")
        outcome = compare_leaf(ref, cand, rule, where, workers,
                               _leaf_facts(facts[index]) if facts else None)
        if not outcome.passed:
            return outcome
        if outcome.metrics:  # none for an empty output: nothing to compare
            per_leaf.append(outcome.metrics)
    return Outcome(metrics=combined(per_leaf))


def _leaf_facts(described):
    """compare_leaf's facts from a leaf's description: its "centre" and "noise" keys."""
    return {key: described[key] for key in ("centre", "noise", "moved") if described.get(key) is not None}


def combined(per_part):
    """TRIAL_METRICS of several outputs (or trials): the worst of each, the mean of the
    mean_* ones (over the parts that measured it)."""
    result = {}
    for name in TRIAL_METRICS:
        values = [part[name] for part in per_part if name in part]
        if values:
            result[name] = (sum(values) / len(values) if name.startswith("mean_")
                            else max(values))
    return result


def _in_memory(values):
    return [TensorLeaf(t) if t is not None else None for t in map(as_tensor, flat_leaves(values))]


def _kind_name(value):
    return type(value).__name__


def compare_outputs(reference, candidate, rule, facts=None):
    """compare_leaves for in-memory forward outputs (tensors, arrays, scalars); `facts`:
    see compare_leaves."""
    ref_leaves = _in_memory(reference)
    if any(leaf is None for leaf in ref_leaves):
        bad = next(v for v, leaf in zip(flat_leaves(reference), ref_leaves) if leaf is None)
        return Outcome(protocol.TASK_ERROR,
                       f"the reference returns a {_kind_name(bad)}, not a tensor")
    cand_values = flat_leaves(candidate)
    cand_leaves = [leaf if leaf is not None else _kind_name(value)
                   for leaf, value in zip(_in_memory(candidate), cand_values)]
    return compare_leaves(ref_leaves, cand_leaves, rule, facts=facts)


def compare_tensors(ref, cand, rule, where="the output", facts=None):
    return compare_leaf(TensorLeaf(ref), TensorLeaf(cand), rule, where, facts=facts)


class OutputInformation:
    """Whether the reference's outputs carry information a comparison can judge, output
    by output, from the reference's own trials: the reference side's test (issue 19,
    item 8). Asking instead whether one constant would pass every element's tolerance
    depends on that tolerance and so, for outputs near it, on the run's secret seed.

    An output carries information when its variation over the trials, ||r - centre||
    about its mean over every element of every trial, is more than its floor: what its
    dtype can carry at its magnitude (protocol.VARIATION_FLOOR of ||r||) and, where the
    reference side measured it, NOISE_FACTOR times its rounding noise (the reference
    again at inputs moved by an ulp, `perturbed`: an output made of cancellations,
    (x - x.mean()).mean(), moves by as much as it varies, so it is noise whatever the
    magnitude it has). Precisely, with F_t the floor of trial t and b the rule's
    max_centered_rel_error: (1 - b^2) * sum_t ||r_t - centre||^2 > sum_t F_t^2. That is
    what makes the judge's variation check reject every constant: a constant c has
    sum_t ||c - r_t||^2 >= sum_t ||r_t - centre||^2, so it cannot be within
    max(b ||r_t - centre||, F_t) of every trial. Integer and bool outputs are
    informative as soon as they vary at all.

    For the reference worker, per run and task:
        information = OutputInformation(rule)
        for each trial:  noise = information.observe(outputs, perturbed_outputs)
                         (store noise[i] as leaf i's "noise" fact of that trial)
        information.facts()          per leaf {"centre": ...}: every trial's fact
        information.uninformative()  None, or why no output carries information
    The judge takes the facts with each trial (compare_leaf's `facts`): the centre makes a
    scalar output (a loss) judged on how it varies across trials, as the test was; the
    noise loosens the bounds of outputs that are mostly rounding noise. Only when no
    output carries information is the task a `task_error`: one informative output is
    enough for a candidate to have to compute, and the others are still compared (a
    constant that passes them is their right value). Inputs can be varied (scaled,
    shifted) to give an output information: each varied trial is observed like the others.

    Each observation reads its outputs in chunks on the CPU (TensorLeaf): for very large
    outputs a device-resident leaf keeps that on the device."""

    def __init__(self, rule):
        self.rule = rule
        self.leaves = None  # per leaf: _Information

    def observe(self, outputs, perturbed_outputs=None):
        """One trial's outputs (a forward's, as compare_outputs takes them) and, when the
        reference side can compute it, the same trial at perturbed inputs. Returns per
        leaf its rounding noise ||r - r'|| (None without perturbed outputs), the trial's
        "noise" fact."""
        leaves = _in_memory(outputs)
        if any(leaf is None for leaf in leaves):
            raise ValueError("the output holds a value that is not a tensor")
        moved = _in_memory(perturbed_outputs) if perturbed_outputs is not None else None
        if moved is not None and (len(moved) != len(leaves) or any(
                m is None or m.shape != l.shape or m.dtype != l.dtype for m, l in zip(moved, leaves))):
            raise ValueError("the perturbed outputs differ in number, shape or dtype from the outputs")
        if self.leaves is None:
            self.leaves = [_Information(self.rule, leaf.dtype) for leaf in leaves]
        if len(self.leaves) != len(leaves):
            raise ValueError(f"a trial with {len(leaves)} outputs after trials with {len(self.leaves)}")
        return [information.observe(leaf, moved[index] if moved else None)
                for index, (information, leaf) in enumerate(zip(self.leaves, leaves))]

    def facts(self):
        """Per leaf, the facts every trial is judged with: {"centre": the mean over all
        observed trials} and, for an integer or bool leaf whose elements the perturbed
        inputs moved, {"moved": the most elements moved in a trial}."""
        return [information.facts() for information in self.leaves or []]

    def informative(self):
        """Per leaf, whether it carries information (see the class)."""
        return [information.informative() for information in self.leaves or []]

    def uninformative(self):
        """Why no output carries information (the task_error's message), or None when one
        does."""
        if not self.leaves or any(self.informative()):
            return None
        parts = [f"{'the output' if len(self.leaves) == 1 else f'output #{index}'} "
                 f"{information.describe()}" for index, information in enumerate(self.leaves)]
        return ("the task's output carries no information a comparison could judge: "
                + "; ".join(parts) + ". Any kernel that returns a constant (or the rounding "
                "noise of its own) would match it; change the task so that its output "
                "depends on its inputs")


class _Information:
    """OutputInformation's record of one output leaf over the trials."""

    def __init__(self, rule, dtype):
        self.rule = dict(rule, **{_FACTS: {}})
        self.whole = WholeOutput(self.rule, dtype)
        self.exact = not (dtype.is_floating_point or dtype.is_complex)
        self.spread = _Spread()  # pooled over the trials' elements; None if not finite
        self.floor_squares = 0.0  # sum over trials of the floor squared
        self.trials = 0
        self.noise_measured = False
        self.noise_ratio = 0.0  # the largest ||r - r'|| / ||r|| seen
        self.moved = 0  # the most elements r' differed in, in a trial (integer leaves)

    def observe(self, leaf, moved):
        if leaf.numel == 0:
            return None
        # One pass: the leaf's spread and norm, and (with `moved`) its distance to the
        # perturbed output; without one, the leaf against itself (distance 0).
        other = moved or leaf
        # Where the output lives (a device's outputs stay there: copying GB-sized ones to
        # the host chunk by chunk costs minutes of CPU).
        device = leaf.device if leaf.device.type != "cpu" and other.device == leaf.device else None
        stats = _statistics(leaf, other, self.rule, 1, device)
        distance, norm = stats.norms()
        noise = distance if moved is not None else None
        self.trials += 1
        if noise is not None:
            self.noise_measured = True
            self.noise_ratio = max(self.noise_ratio, _ratio(distance, norm))
            if self.exact:
                self.moved = max(self.moved, leaf.numel - stats.within)
        self.floor_squares += self.whole.floor(norm, noise or 0.0) ** 2
        self.spread = (self.spread.merged(stats.spread)
                       if self.spread is not None and stats.spread is not None else None)
        return noise

    def facts(self):
        facts = {"centre": self.spread.centre()} if self.spread else {}
        if self.moved:
            facts["moved"] = self.moved
        return facts

    def variation(self):
        return None if self.spread is None else self.spread.around()

    def informative(self):
        variation = self.variation()
        if variation is None:  # an infinite value: the output is not a constant
            return True
        if self.exact:
            return variation > 0
        bound = self.whole.max_centered
        keep = 1 - bound * bound if bound is not None else 1.0
        return keep * variation * variation > self.floor_squares

    def describe(self):
        variation = self.variation() or 0.0
        floor = math.sqrt(self.floor_squares)
        text = (f"varies by ||r - mean|| = {variation:.3g} over {self.trials} trial(s), within "
                f"its floor {floor:.3g} (what its dtype carries at its magnitude")
        if self.noise_measured:
            text += (f", and {protocol.NOISE_FACTOR:g} times its rounding noise: inputs moved "
                     f"by an ulp move it by up to {self.noise_ratio:.3g} of itself")
        return text + ")"


def perturbed(value, seed, done=None):
    """An input moved by about an ulp per element, for OutputInformation's rounding noise:
    floating-point tensors and NumPy arrays are multiplied element by element by
    1 +/- eps of their dtype (signs drawn from `seed`, on the tensor's device), which
    changes every element by one or two ulps, keeps zeros and signs, and changes every
    rounding downstream as a computation in another order would. Anything else (integers,
    bools, Python numbers, other values' parts) is returned as it is; plain lists, tuples
    and dicts are perturbed item by item, and a tensor met twice is moved once, at both
    places (an alias kept)."""
    done = {} if done is None else done
    if id(value) in done:  # met before: an alias, or a container that holds itself
        return done[id(value)][1]
    if type(value) is list:
        moved = []
        done[id(value)] = (value, moved)
        moved.extend(perturbed(item, seed + index, done) for index, item in enumerate(value))
        return moved
    if type(value) is dict:
        moved = {}
        done[id(value)] = (value, moved)
        moved.update((key, perturbed(item, seed + index, done)) for index, (key, item) in enumerate(value.items()))
        return moved
    if type(value) is tuple:
        return tuple(perturbed(item, seed + index, done) for index, item in enumerate(value))
    if isinstance(value, (np.ndarray, torch.Tensor)):
        done[id(value)] = (value, _perturbed_leaf(value, seed))
        return done[id(value)][1]
    return value


def _perturbed_leaf(value, seed):
    if isinstance(value, np.ndarray) and (np.issubdtype(value.dtype, np.floating)
                                          or np.issubdtype(value.dtype, np.complexfloating)):
        tensor = _perturbed_leaf(torch.from_numpy(np.ascontiguousarray(value)), seed)
        return tensor.numpy().astype(value.dtype, copy=False)
    if not isinstance(value, torch.Tensor) or not (value.is_floating_point() or value.is_complex()):
        return value
    real = torch.view_as_real(value.resolve_conj()) if value.is_complex() else value
    generator = torch.Generator(device=real.device)
    generator.manual_seed(seed)
    signs = torch.randint(0, 2, real.shape, generator=generator, device=real.device)
    factor = signs.to(torch.float32).mul_(2 * torch.finfo(real.dtype).eps).add_(
        1 - torch.finfo(real.dtype).eps)
    if real.dtype == torch.float64:
        moved = real * factor.double()
    else:
        moved = (real.float() * factor).to(real.dtype)
    return torch.view_as_complex(moved.contiguous()) if value.is_complex() else moved
