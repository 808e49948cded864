"""Comparing candidate outputs with reference outputs under a configurable rule, and
detecting references too constant for a comparison to prove anything.

All arithmetic is in float64 on the outputs' device, so a fp32 difference is exact and
large GPU outputs never travel to the host. NumPy reference outputs arrive here already
turned into CPU tensors (torch.from_numpy: same values, same dtype)."""

import math

import torch

from . import protocol


def dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def leaves(obj):
    """The outputs of a forward as a flat list (tuples/lists unpacked, in order)."""
    if isinstance(obj, (list, tuple)):
        return [leaf for item in obj for leaf in leaves(item)]
    return [obj]


def as_tensor(value):
    """A forward's output leaf as a tensor (NumPy arrays and Python/NumPy scalars too)."""
    if isinstance(value, torch.Tensor):
        return value
    try:
        import numpy as np
        if isinstance(value, (np.ndarray, np.generic)):
            return torch.from_numpy(np.ascontiguousarray(value))
    except ImportError:
        pass
    if isinstance(value, (bool, int, float)):
        return torch.tensor(value)
    return None


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
    """The verdict of one trial's comparison."""

    def __init__(self, error_class="", message="", max_abs_diff=None, mean_abs_diff=None):
        self.error_class = error_class
        self.message = message
        self.max_abs_diff = max_abs_diff
        self.mean_abs_diff = mean_abs_diff

    @property
    def passed(self):
        return not self.error_class


def _describe(value):
    return type(value).__name__ if not isinstance(value, torch.Tensor) else "Tensor"


def compare_outputs(reference, candidate, rule):
    """Compares two forwards' outputs leaf by leaf; the first failing leaf decides."""
    ref_leaves, cand_leaves = leaves(reference), leaves(candidate)
    if len(ref_leaves) != len(cand_leaves):
        return Outcome(protocol.SHAPE_MISMATCH,
                       f"the reference returns {len(ref_leaves)} output(s), the candidate "
                       f"{len(cand_leaves)}")
    worst_max, mean_sum, compared = 0.0, 0.0, 0
    for index, (ref_value, cand_value) in enumerate(zip(ref_leaves, cand_leaves)):
        ref, cand = as_tensor(ref_value), as_tensor(cand_value)
        where = f"output #{index}" if len(ref_leaves) > 1 else "the output"
        if ref is None:
            return Outcome(protocol.HARNESS_ERROR,
                           f"the reference's {where} is a {_describe(ref_value)}, not a tensor")
        if cand is None:
            return Outcome(protocol.DTYPE_MISMATCH,
                           f"{where} is a {_describe(cand_value)}; the reference returns a "
                           f"tensor of {dtype_name(ref.dtype)}")
        outcome = compare_tensors(ref, cand, rule, where)
        if not outcome.passed:
            return outcome
        if outcome.max_abs_diff is not None:  # None: an empty output, nothing to compare
            worst_max = max(worst_max, outcome.max_abs_diff)
            mean_sum += outcome.mean_abs_diff
            compared += 1
    return Outcome(max_abs_diff=worst_max, mean_abs_diff=mean_sum / max(1, compared))


def abs_diff(ref, cand):
    """|cand - ref| in float64, with equal infinities counted as no difference."""
    ref64, cand64 = ref.to(torch.float64), cand.to(ref.device, torch.float64)
    diff = (cand64 - ref64).abs()
    return torch.where(cand64 == ref64, torch.zeros_like(diff), diff), ref64


def compare_tensors(ref, cand, rule, where="the output"):
    if tuple(cand.shape) != tuple(ref.shape):
        return Outcome(protocol.SHAPE_MISMATCH,
                       f"{where} has shape {list(cand.shape)}, the reference's "
                       f"{list(ref.shape)}")
    if cand.dtype != ref.dtype:
        return Outcome(protocol.DTYPE_MISMATCH,
                       f"{where} has dtype {dtype_name(cand.dtype)}, the reference's "
                       f"{dtype_name(ref.dtype)}")
    if ref.numel() == 0:
        return Outcome()
    if ref.is_complex():
        ref, cand = torch.view_as_real(ref), torch.view_as_real(cand)
    diff, ref64 = abs_diff(ref, cand)
    max_diff = float(diff.max())  # NaN when any difference is NaN
    finite = diff[torch.isfinite(diff)]
    mean_diff = float(finite.mean()) if finite.numel() else math.inf

    # NaN never passes: not in the candidate, and not in the reference either (a task whose
    # reference yields NaN cannot judge anyone).
    ref_nan = int(torch.isnan(ref64).sum())
    cand_nan = int(torch.isnan(cand.to(torch.float64)).sum())
    if ref_nan:
        return Outcome(protocol.NUMERICAL_MISMATCH,
                       f"the reference's {where} contains {ref_nan} NaN value(s): NaN never "
                       "passes; fix the task's inputs", max_diff, mean_diff)
    if cand_nan:
        return Outcome(protocol.NUMERICAL_MISMATCH,
                       f"{where} contains {cand_nan} NaN value(s) of {ref.numel()} "
                       "(the reference has none)", max_diff, mean_diff)

    atol, rtol = tolerance(rule, ref.dtype)
    over = ~(diff <= atol + rtol * ref64.abs())
    over_count = int(over.sum())
    stats = f"max abs diff {max_diff:.3g}, mean abs diff {mean_diff:.3g}"
    kind = rule["kind"]
    if kind == "allclose" and over_count:
        return Outcome(protocol.NUMERICAL_MISMATCH,
                       f"{where}: {over_count} of {ref.numel()} elements differ beyond "
                       f"atol={atol:g}, rtol={rtol:g}; {stats}", max_diff, mean_diff)
    if kind == "max_abs_diff" and not max_diff < rule["limit"]:
        return Outcome(protocol.NUMERICAL_MISMATCH,
                       f"{where}: {stats}, over the limit {rule['limit']:g}",
                       max_diff, mean_diff)
    if kind == "share_over_limit":
        share = over_count / ref.numel()
        if share > rule["max_share"]:
            return Outcome(protocol.NUMERICAL_MISMATCH,
                           f"{where}: {share:.2%} of elements differ beyond rtol={rtol:g} "
                           f"(atol={atol:g}), more than the {rule['max_share']:.2%} allowed; "
                           f"{stats}", max_diff, mean_diff)
    return Outcome(max_abs_diff=max_diff, mean_abs_diff=mean_diff)


class ConstantDetector:
    """Tells whether ONE constant value, returned for every output element, would have
    passed every trial so far. Then the comparison proves nothing about a candidate that
    passes (KernelBench issue #165: zero output on tasks whose reference is ~0).

    For each output leaf it keeps the interval of constants c that satisfy
    |c - r| <= atol + rtol*|r| for every element r seen: the per-element allowed
    intervals, intersected over elements and trials. The task is degenerate when every
    leaf's interval is still non-empty. (For share_over_limit this ignores the allowed
    share, so it can only under-report.)

    `elementwise` tells the two ways a reference gets there. Outputs with many elements
    that are all (nearly) the same value are KernelBench #165's pattern: the operators
    erase the input. Scalar outputs are different: a loss over millions of random
    elements is nearly the same number in every trial (law of large numbers), although it
    does depend on the input; rejecting correct kernels for that would be wrong."""

    def __init__(self, rule):
        self.rule = rule
        self.intervals = None  # per leaf: [lo, hi], or None once the leaf varies
        self.elementwise = False  # some output has more than one element

    def observe(self, reference):
        ref_leaves = [as_tensor(v) for v in leaves(reference)]
        if self.intervals is None:
            self.intervals = [[-math.inf, math.inf] for _ in ref_leaves]
        for index, ref in enumerate(ref_leaves):
            interval = self.intervals[index]
            if interval is None or ref is None or ref.numel() == 0:
                continue
            self.elementwise = self.elementwise or ref.numel() > 1
            if ref.is_complex():
                ref = torch.view_as_real(ref)
            ref64 = ref.to(torch.float64)
            if not bool(torch.isfinite(ref64).all()):
                self.intervals[index] = None
                continue
            atol, rtol = tolerance(self.rule, ref.dtype)
            slack = atol + rtol * ref64.abs()
            interval[0] = max(interval[0], float((ref64 - slack).max()))
            interval[1] = min(interval[1], float((ref64 + slack).min()))
            if interval[0] > interval[1]:
                self.intervals[index] = None

    def constant(self):
        """A constant that would pass every trial for every output, or None."""
        if not self.intervals or any(i is None for i in self.intervals):
            return None
        lo, hi = self.intervals[0]
        return lo if math.isinf(hi) else hi if math.isinf(lo) else (lo + hi) / 2
