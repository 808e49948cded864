"""Shrinking a KernelBench-format task until its reference runs within a memory budget,
while the task stays valid: `fit()` (the harness's reference worker calls it) and
`python -m kforge_harness.tasks.fit TASK.py --budget-mb 256` (people).

Why trying and not rules: what a task needs (a kernel no larger than its input, channels
divisible by groups, an embedding divisible by heads, an image divisible by patch and
window sizes, a LayerNorm shape equal to the input's last dims, an assert on the input
size) lives in the model's code, not in the constants' names. So candidate sizes are
tried on PyTorch's meta device (footprint.on_meta: shapes only, milliseconds): a shape
error, an assert or a divisibility error rejects a candidate, and the peak of live tensor
bytes ranks it. The chosen sizes are then run for real (footprint.on_device) and their
measured peak must be within the budget.

The search:
- the sizes are the task's module-level integer constants (sizes.py's slots);
- it goes in stages (STAGES), each in rounds; a round tries to shrink every constant of
  the stage once, the largest value first (names break ties), so big dimensions shrink
  together and keep their proportions, as size_scale would. First the constants >= 16
  that size tensors, then the smaller ones that do (a batch of 10, an image side of 14);
  a constant whose change leaves every tensor's shape as it was sizes nothing (a layer
  count: it changes how many tensors there are) and waits for the last stage, which
  runs only when memory is still over the budget; the note names what shrank there;
- one shrink of a constant v tries, in order, the largest divisors of v that are at most
  v/2 (keeping any divisibility v had: 224 -> 112, 56, 32), then gentler steps (3v/4,
  7v/8), then the same move applied to every constant of the same value together (two
  constants that must stay equal); the first candidate that runs and lowers the need by
  1% or more wins; a constant none of whose candidates runs stays as it is;
- it stops as soon as the need is within the targets; when no move helps any more and
  memory is still over the budget, the task cannot fit, and the error names each
  constant that would not shrink, why, and the smallest peak reached.

Besides memory, on CPU a forward must not take minutes: the work of a forward
(multiply-adds of matmuls and convolutions plus elements written by other operators,
counted on the meta device) is held under `max_forward_s` x a fixed CPU speed. Work is a
soft bound: where no size lowers it further the sizes stand, and the note says so.

Deterministic: the same task, budget and device give the same sizes. Decisions rest on
meta-device estimates; a real measurement steers only when it shows the estimate was too
low (memory: allocator workspaces; time: a forward SLOW_FACTOR times slower than the
work predicts), in quarter-octave steps, so its noise matters only at a step's edge.
Where the meta device cannot run the reference (it fails there, e.g. a path chosen on a
value read back from the data, which the meta run sees as zero) or the task is not a
PyTorch one (kernelbench-numpy, -mindspore), the same search runs on real runs in
forked children with an address-space limit, and their measurements decide.

size_scale applies first: the search starts from the file's sizes scaled by size_scale
(base_sizes, a manifest profile's sizes, replace those and are never shrunk). Tasks with
a manifest profile for the chosen profile are not fitted at all: tasks.kernelbench sets
their task.fit_memory_mb to 0.
"""

import argparse
import ast
import dataclasses
import json
import math
import sys
import time
import traceback

import torch

from kforge_harness.tasks import footprint, forked
from kforge_harness.devices import Device
from kforge_harness.tasks.sizes import SCALE_THRESHOLD, module_sizes, scaled

MB = footprint.MB
# Work units (multiply-adds + elements written) a CPU does per second, about, on the
# shared 2-core machines this was measured on (Debian's torch 1.13 with OpenBLAS: a
# 2000^3 matmul, 8e9 multiply-adds, takes 4 s alone, twice that under load). A fixed rate,
# not a measured one: the sizes must not depend on how busy the machine is.
CPU_WORK_PER_S = 1e9
DEFAULT_MAX_FORWARD_S = 0.5  # on CPU; accelerators are not limited by work
MIN_GAIN = 0.01  # a move must lower the need by this share to count
# What each stage of the search may shrink: (smallest value, kind). "dimension": constants
# that size tensors (batch, channels, widths, image sides): changing one changes the
# shapes of the tensors a meta run makes; "any": also counts and structure (layers,
# repeats: changing one changes only how many tensors of each shape there are), as a last
# resort for memory.
STAGES = ((SCALE_THRESHOLD, "dimension"), (2, "dimension"), (2, "any"))
MAX_VERIFICATIONS = 4
RUN_TIMEOUT_S = 120.0  # one real run of the reference
# The meta search aims this far below the budget: a real peak adds what no tensor holds
# (Python objects, allocator slack), and estimates landing exactly on the budget (sizes
# are often powers of two) would pass or fail on that noise.
HEADROOM = 0.9
MARGIN = 0.1  # aim this much lower again after a real run measured more than the meta device
SLOW_FACTOR = 8.0  # a real forward this many times over max_forward_s makes the search go on


class FitError(Exception):
    """Base of the fitter's errors; str() is a complete message for the user."""


class TaskBroken(FitError):
    """The task cannot run as its own reference (it does not parse, its own import fails,
    or it fails at its starting sizes): a task_error, never a fit failure. For a failed
    import `missing_module` names the module (e.g. "einops")."""

    def __init__(self, message, missing_module=None):
        super().__init__(message)
        self.missing_module = missing_module


class CannotFit(FitError):
    """No valid sizes within the budget were found. `smallest_peak_mb`: the smallest need
    reached; `sizes`: where; `blockers`: {constant: why it did not shrink further}."""

    def __init__(self, message, smallest_peak_mb, sizes, blockers):
        super().__init__(message)
        self.smallest_peak_mb = smallest_peak_mb
        self.sizes = sizes
        self.blockers = blockers


@dataclasses.dataclass
class FitResult:
    """sizes: every module-level integer constant at its chosen value (a complete
    task.sizes); changes: {name: (value in the file, chosen value)} for those that differ;
    peak_mb: the measured peak at the chosen sizes on the device; forward_s: the measured
    time of one forward there; note: what was done, one line; seconds: time fit() took;
    evaluations: how many runs of the reference it took (meta and real)."""

    sizes: dict
    changes: dict
    peak_mb: float
    forward_s: float
    note: str
    seconds: float
    evaluations: int

    def to_json(self):
        return dataclasses.asdict(self)


def fit(path, task_format="kernelbench-torch", budget_mb=256, device="cpu", base_sizes=None,
        size_scale=1.0, source=None, max_forward_s=None, timeout_s=600.0):
    """Sizes for the task at `path` (KernelBench format) whose reference runs within
    `budget_mb` MB on `device` ("cpu", "cuda:N", "npu:N" or a devices.Device).

    - base_sizes: {name: int} fixed sizes (never shrunk); size_scale multiplies the other
      constants >= 16 first (sizes.py); the search starts there.
    - source: the task's text when the caller has it (else read from path).
    - max_forward_s: bound on one forward's work on CPU (default DEFAULT_MAX_FORWARD_S;
      0: none); accelerators are bounded by memory only.
    - timeout_s: bound on the whole fit.
    Returns a FitResult. Raises TaskBroken (a task_error; `missing_module` set for a
    failed import) or CannotFit (a task_error too: the task needs more than the budget
    allows), each with a complete message; ValueError for a bad argument (a base_sizes
    name the task lacks, an accelerator this process has initialised already);
    RuntimeError for a fault of the fitter itself (a harness_error).

    The calling process is left as it was: everything runs in a forked child (meta-device
    runs, and on an accelerator the real runs, which initialise the device there), and on
    CPU each real run in a child of that child. So the caller must not have initialised
    the accelerator (a forked child cannot use it): call fit() before the self-test. A
    caller that ran parallel CPU work has its children run on one thread (forked.py)."""
    started = time.monotonic()
    device = device if isinstance(device, Device) else Device(device)
    if max_forward_s is None:
        max_forward_s = 0 if device.is_accelerator else DEFAULT_MAX_FORWARD_S
    if device.is_accelerator and getattr(device.module(torch), "is_initialized", bool)():
        raise ValueError(f"fit() must run before this process initialises {device.name}: "
                         "its forked child could not use the device")
    code = _task_code(path, task_format, source)
    search = _Search(code, budget_mb * MB, device, base_sizes or {}, size_scale,
                     max_forward_s)
    try:
        answer = forked.call(search.answer, timeout_s)
    except forked.ChildFailed as exc:
        if exc.kind == "timeout":
            raise TaskBroken(f"{path}: fitting its sizes took more than {timeout_s:g} s (the "
                             "reference is too slow at every size tried)") from None
        raise TaskBroken(f"{path}: running its reference while fitting its sizes, {exc}") from None
    if "error" in answer:
        error = answer["error"]
        if error == "task_broken":
            raise TaskBroken(answer["message"], answer.get("missing_module"))
        if error == "cannot_fit":
            raise CannotFit(answer["message"], answer["smallest_peak_mb"], answer["sizes"],
                            answer["blockers"])
        raise RuntimeError(f"the size fitter failed on {path}: {answer['message']}")
    sizes = answer["sizes"]
    changes = {name: (search.file_sizes[name], value) for name, value in sizes.items()
               if value != search.file_sizes[name]}
    return FitResult(sizes, changes, answer["peak_mb"], answer["forward_s"], answer["note"],
                     time.monotonic() - started, answer["evaluations"])


def _task_code(path, task_format, source):
    if source is None:
        try:
            with open(path, encoding="utf-8") as handle:
                source = handle.read()
        except OSError as exc:
            raise TaskBroken(f"cannot read task file {path}: {exc.strerror}") from exc
    try:
        ast.parse(source, filename=path)
    except SyntaxError as exc:
        raise TaskBroken(f"task file {path}:{exc.lineno} does not parse: {exc.msg}") from exc
    return footprint.TaskCode(source, path, task_format)


def _divisors(value):
    small = [d for d in range(1, math.isqrt(value) + 1) if value % d == 0]
    return set(small) | {value // d for d in small}


def smaller_values(value):
    """The values a constant now at `value` may shrink to, in the order they are tried."""
    halves = sorted({d for d in _divisors(value) if d <= value // 2} | {value // 2},
                    reverse=True)
    gentle = [v for v in (value * 3 // 4, value * 7 // 8) if value // 2 < v < value]
    return [v for v in halves[:3] + gentle if v >= 1]


class _Search:
    def __init__(self, code, budget, device, base_sizes, size_scale, max_forward_s):
        self.code = code
        self.budget = budget
        self.device = device
        self.evaluations = 0
        tree = ast.parse(code.source, filename=code.path)
        self.file_sizes = module_sizes(tree)
        unknown = sorted(set(base_sizes) - set(self.file_sizes))
        if unknown:
            raise ValueError(f"base_sizes names {', '.join(unknown)}, but {code.path} has no "
                             "module-level integer constant of that name (it has: "
                             f"{', '.join(sorted(self.file_sizes)) or 'none'})")
        self.fixed = set(base_sizes)
        self.start = {name: base_sizes.get(name, scaled(value, size_scale))
                      for name, value in self.file_sizes.items()}
        self.size_scale = size_scale
        self.max_work = max_forward_s * CPU_WORK_PER_S if max_forward_s else 0
        self.max_forward_s = max_forward_s
        self.mem_target = budget * HEADROOM
        self.on_meta = True
        self.structure = set()  # constants whose change left the tensors' shapes alone
        self.outcomes = {}  # (on the meta device?, sizes) -> Outcome
        self.unusual = {}  # constants shrunk below 16 or that are not sizes: {name: stage kind}
        self.work_stuck = None  # the work no size could lower further, if over the bound
        self.blockers = {}

    # ---- evaluating one assignment ----

    def evaluate(self, sizes):
        """The outcome at `sizes`, once per assignment: later rounds retry constants whose
        earlier candidates failed, and the same candidates fail the same way."""
        key = (self.on_meta, tuple(sorted(sizes.items())))
        if key not in self.outcomes:
            if self.on_meta:
                self.evaluations += 1
                self.outcomes[key] = footprint.on_meta(self.code, sizes, self.budget / 4)
            else:
                self.outcomes[key] = self.real(sizes)
        return self.outcomes[key]

    def real(self, sizes):
        # The address-space limit makes a too big candidate fail at its first big
        # allocation, in milliseconds, instead of computing for seconds (or swapping);
        # beyond the budget it allows room for malloc's arenas and threads' stacks.
        self.evaluations += 1
        timeout_s = RUN_TIMEOUT_S
        if self.max_forward_s:  # far slower than the bound is all a real run must show
            timeout_s = min(timeout_s, 2 * SLOW_FACTOR * self.max_forward_s + 10)
        return footprint.on_device(self.code, sizes, self.device, timeout_s,
                                   address_limit=self.budget + 64 * MB,
                                   time_again_over_s=self.max_forward_s)

    def need(self, outcome):
        """How far over its targets an outcome is (<= 1: within them); None: unknown
        (a real run that ran out of its address space or time: too big)."""
        if not outcome.ok:
            return None
        need = outcome.peak_bytes / self.mem_target
        if self.on_meta and self.max_work:
            need = max(need, outcome.work / self.max_work)
        elif not self.on_meta and self.max_forward_s and outcome.forward_cpu_s is not None:
            need = max(need, outcome.forward_cpu_s / self.max_forward_s)
        return need

    # ---- the search ----

    def answer(self):
        """run() as JSON, in the forked child: sizes or an error."""
        if not self.device.is_accelerator:
            # Meta runs allocate nothing, but a task may make its inputs with NumPy: at
            # KernelBench's sizes that is gigabytes, which must fail here, not swap.
            footprint.limit_address_space(2 * self.budget + 1024 * MB)
        try:
            sizes, measured = self.run()
        except TaskBroken as exc:
            return {"error": "task_broken", "message": str(exc),
                    "missing_module": exc.missing_module}
        except CannotFit as exc:
            return {"error": "cannot_fit", "message": str(exc), "sizes": exc.sizes,
                    "smallest_peak_mb": exc.smallest_peak_mb, "blockers": exc.blockers}
        except Exception:  # noqa: BLE001 - the fitter's own fault, for the caller to raise
            return {"error": "internal", "message": traceback.format_exc()}
        changed = any(sizes[n] != v for n, v in self.file_sizes.items())
        return {"sizes": sizes, "peak_mb": measured.peak_bytes / MB,
                "forward_s": measured.forward_s, "note": self.note(changed, measured),
                "evaluations": self.evaluations}

    def run(self):
        # The meta device runs torch models only: a NumPy or MindSpore reference runs for
        # real from the start.
        self.on_meta = self.code.format == "kernelbench-torch"
        first = self.evaluate(self.start)
        if first.kind in ("meta_unsupported", "error") and self.on_meta:
            # The meta device cannot run it, or it fails there: the meta run feeds zeros
            # to whatever reads values back (x.max().item()), which may take a path the
            # real data would not. Only a real run says the task is broken.
            self.on_meta = False
            first = self.evaluate(self.start)
        self._raise_if_broken(first)
        sizes, outcome = self.start, first
        for _ in range(MAX_VERIFICATIONS):
            sizes, outcome = self.shrink(sizes, outcome)
            measured = outcome if not self.on_meta else self.real(sizes)
            if measured.kind == "error":
                # The meta device was wrong about these sizes (values it cannot know): search
                # again from the start, with real runs.
                self.on_meta = False
                self.mem_target = self.budget * HEADROOM
                sizes, outcome = self.start, self.evaluate(self.start)
                self._raise_if_broken(outcome)
                continue
            over_memory = not measured.ok or measured.peak_bytes > self.budget
            too_slow = self._too_slow(measured) and self.work_stuck is None
            if not over_memory and not too_slow:
                return sizes, measured
            if not self.on_meta:  # the real-run search aimed at the budget itself
                raise self._cannot_fit(sizes, measured, "its real runs stay over the budget",
                                       measured=True)
            # The meta device misses what only a real run shows: allocator workspaces
            # (im2col buffers, 2.5x the tensors for CPU depthwise convolutions), slow
            # operator paths (a matmul of two transposed operands: 16x). Aim lower by what
            # was measured and search on from here.
            if over_memory:
                # The meta estimate fell this far short here; the next sizes' estimate
                # must stay that far below the budget.
                real = measured.peak_bytes if measured.ok else 2 * self.budget
                short = real / max(outcome.peak_bytes, 1)
                self.mem_target = min(self.mem_target, self.budget * HEADROOM
                                      / _quarter_octave(short * (1 + MARGIN)))
            if too_slow:
                slower = measured.forward_cpu_s / self.max_forward_s if measured.ok else 8.0
                self.max_work /= 2 ** math.ceil(math.log2(slower))
            outcome = self.evaluate(sizes)
        raise self._cannot_fit(sizes, measured, "its measured peak stays above the budget",
                               measured=True)

    def _too_slow(self, measured):
        """Whether a real forward took far more CPU time than the work bound predicted.
        CPU time, not wall time: on a shared machine the wall time of the same forward
        varies several-fold with the load. Only far more (SLOW_FACTOR): the sizes should
        not depend on noise."""
        if not self.on_meta or not self.max_forward_s:
            return False
        if measured.kind == "timeout":
            return True
        return measured.ok and measured.forward_cpu_s > SLOW_FACTOR * self.max_forward_s

    def _raise_if_broken(self, outcome):
        if outcome.kind == "import":
            raise TaskBroken(f"{self.code.path}: the task's own import fails: {outcome.error}; "
                             f"install {outcome.missing or 'the missing module'}",
                             missing_module=outcome.missing)
        if outcome.kind == "error":
            where = ("at its own sizes" if self.size_scale == 1 else
                     f"at its sizes scaled by size_scale {self.size_scale:g} (fit without "
                     "size_scale, or raise it)")
            raise TaskBroken(f"{self.code.path}: the reference fails {where}, in "
                             f"{outcome.phase}: {outcome.error}")

    def shrink(self, sizes, outcome):
        """Greedy rounds from `sizes`, stage by stage (STAGES), until the need is within
        the targets. Memory is a hard bound; work is not: where no size lowers it further,
        the sizes stand and the note says so."""
        need = self.need(outcome)
        for floor, kind in STAGES:
            if need is not None and need <= 1:
                break
            if kind == "any" and not self._over_memory(outcome):
                break  # the model's structure changes for memory only, never for time
            sizes, outcome, need = self._rounds(sizes, outcome, need, floor, kind)
        if need is None or need > 1:
            if self._over_memory(outcome):
                raise self._cannot_fit(sizes, outcome, None)
            self.work_stuck = outcome.work
        return sizes, outcome

    def _over_memory(self, outcome):
        return not outcome.ok or outcome.peak_bytes > self.mem_target

    def _rounds(self, sizes, outcome, need, floor, kind):
        frozen = set()
        while need is None or need > 1:
            moved = False
            for name in self._order(sizes, floor, kind, frozen):
                found = self._move(sizes, outcome, name, need, kind)
                if found is None:
                    continue
                if found == "frozen":
                    frozen.add(name)
                    continue
                sizes, outcome, need = found
                moved = True
                if floor < SCALE_THRESHOLD or kind == "any":
                    self.unusual[name] = kind
                if need is not None and need <= 1:
                    break
            if not moved or (need is not None and need <= 1):
                break
        return sizes, outcome, need

    def _order(self, sizes, floor, kind, frozen):
        names = [n for n, v in sizes.items()
                 if n not in self.fixed and n not in frozen and v >= floor
                 and (kind == "any" or n not in self.structure)]
        return sorted(names, key=lambda n: (-sizes[n], n))

    def _move(self, sizes, current, name, need, kind):
        """The first candidate for `name` that runs and lowers the need: (sizes, outcome,
        need); None if a candidate runs without helping; "frozen" if none runs, or if
        `name` turns out to size no tensor while only sizes may shrink (kind)."""
        value = sizes[name]
        together = sorted(n for n, v in sizes.items()
                          if v == value and n not in self.fixed and n != name)
        trials = [(name,)] + ([(name, *together)] if together else [])
        errors = []
        for names in trials:
            for candidate in smaller_values(value):
                trial = dict(sizes)
                trial.update({n: candidate for n in names})
                outcome = self.evaluate(trial)
                if outcome.kind in ("error", "meta_unsupported", "import"):
                    errors.append(f"{value} -> {candidate}: {outcome.error}")
                    continue
                if (kind != "any" and self.on_meta and outcome.ok and current.ok
                        and outcome.shapes == current.shapes):
                    self.structure.add(name)
                    self.blockers[name] = (f"{value}: sizes no tensor (a count or the model's "
                                           "structure), shrunk only when memory needs it")
                    return "frozen"
                new_need = self.need(outcome)
                if need is None or new_need is None or new_need < need * (1 - MIN_GAIN):
                    self.blockers.pop(name, None)
                    return trial, outcome, new_need
                self.blockers[name] = f"{value}: shrinking it saves less than {MIN_GAIN:.0%}"
                return None
        self.blockers[name] = f"{value}: {errors[0]}" if errors else f"{value}: cannot shrink"
        return "frozen"

    def _cannot_fit(self, sizes, outcome, reason, measured=False):
        peak_mb = outcome.peak_bytes / MB if outcome.ok else None
        peak = (f"the smallest peak reached is {peak_mb:.1f} MB"
                f"{' (measured)' if measured else ' (estimated on the meta device)'}"
                if peak_mb is not None else "even the smallest sizes tried ran out of memory or time")
        if outcome.ok and outcome.weight_bytes:
            peak += f", of which the model's parameters and buffers take {outcome.weight_bytes / MB:.1f} MB"
        blockers = dict(self.blockers)
        for name, value in sizes.items():
            if name in self.fixed:
                blockers.setdefault(name, f"{value}: fixed by the task's sizes")
            elif value < 2:
                blockers.setdefault(name, f"{value}: cannot shrink")
        why = "; ".join(f"{name}={text}" for name, text in sorted(blockers.items()))
        work = ""
        if self.on_meta and self.max_work and outcome.ok and outcome.work > self.max_work:
            work = (f"; its forward does {outcome.work:.3g} units of work, over the "
                    f"{self.max_work:.3g} allowed ({self.max_forward_s:g} s on CPU)")
        message = (f"{self.code.path}: cannot fit within {self.budget / MB:g} MB: {peak}"
                   f"{work} at sizes {_sizes_text(sizes)}"
                   f"{'; ' + reason if reason else ''}; no constant shrinks further: "
                   f"{why or 'the task has no module-level integer constants'}")
        return CannotFit(message, peak_mb, sizes, blockers)

    def note(self, changed, measured):
        how = ("the meta device, then a real run" if self.on_meta else
               "real runs (the meta device cannot run this reference)")
        text = (f"fitted to {self.budget / MB:g} MB by {how} ({self.evaluations} runs): "
                f"peak {measured.peak_bytes / MB:.1f} MB")
        if not changed:
            text += ", no size changed"
        small = sorted(n for n, kind in self.unusual.items() if kind == "dimension")
        structure = sorted(n for n, kind in self.unusual.items() if kind == "any")
        if small:
            text += f"; sizes below {SCALE_THRESHOLD} shrank too: {', '.join(small)}"
        if structure:
            text += (f"; the model's structure changed (constants that size no tensor): "
                     f"{', '.join(structure)}")
        if self.work_stuck is not None:
            text += (f"; its forward does {self.work_stuck:.3g} units of work, over the "
                     f"{self.max_work:.3g} of max_forward_s {self.max_forward_s:g} s, and no "
                     "size lowers it further")
        return text


def _quarter_octave(factor):
    """`factor` rounded up to a power of 2 ** 0.25: the next target depends on a real
    measurement, and a few percent of noise in it should rarely change the sizes."""
    return 2 ** (math.ceil(4 * math.log2(factor)) / 4)


def _sizes_text(sizes):
    return ", ".join(f"{k}={v}" for k, v in sizes.items()) or "(none)"


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m kforge_harness.tasks.fit",
        description="Shrink a KernelBench-format task until its reference runs within a "
                    "memory budget; prints the chosen sizes and the measured peak.")
    parser.add_argument("task", help="the task file (class Model, get_inputs, get_init_inputs)")
    parser.add_argument("--budget-mb", type=float, required=True)
    parser.add_argument("--device", default="cpu", help="cpu, cuda:N or npu:N")
    parser.add_argument("--format", default="kernelbench-torch")
    parser.add_argument("--size-scale", type=float, default=1.0)
    parser.add_argument("--max-forward-s", type=float, default=None,
                        help=f"bound on one forward's work on CPU (default {DEFAULT_MAX_FORWARD_S:g}; 0: none)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args(argv)
    try:
        result = fit(args.task, args.format, args.budget_mb, args.device,
                     size_scale=args.size_scale, max_forward_s=args.max_forward_s)
    except FitError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(result.to_json()))
        return 0
    for name, value in result.sizes.items():
        old = result.changes.get(name, (value,))[0]
        print(f"{name} = {value}" + (f"  (was {old})" if old != value else ""))
    forward = f", forward {result.forward_s:.3f} s" if result.forward_s is not None else ""
    print(f"peak {result.peak_mb:.1f} MB on {args.device}{forward}; {result.note}; "
          f"{result.seconds:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
