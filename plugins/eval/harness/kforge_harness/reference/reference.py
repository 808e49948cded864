"""The reference worker: a trusted child of the server that runs only the task's own code.

For one task at its sizes on this device it fits the sizes when asked
(`task.fit_memory_mb`), self-tests the task, computes the reference's outputs for the
input seeds it is given and writes them into its entry of the reference store
(outputs.write_leaves), measures the task's peak memory, and times the reference when
asked. Anything that goes wrong is the task's (a `task_error` saying why), except
setting up the device, which is the harness's. The result goes to the server as one
{"result": ...} line (child.reference_main): this process is trusted, so its result is a
verdict."""

import errno
import sys
import time
import traceback

import torch

from kforge_harness.anticheat import anticheat
from kforge_harness.protocol import errors
from kforge_harness.tasks import fit, task_modules
from kforge_harness import protocol
from kforge_harness.judge.compare import ConstantDetector
from kforge_harness.judge.outputs import SCRATCH_FULL, as_tensor, write_leaves
from kforge_harness.tasks.runner import (MissingFramework, Side, all_finite, nan_count,
                                         reinitialise, task_session)
from kforge_harness.timing.timing import InputPool, Timer, input_bytes, pool_size

MB = 1 << 20

# The (scale, shift) of the extra trials that make a near-constant reference vary, tried
# in this order until no constant passes every trial: bigger and smaller inputs (outputs
# that round to zero, or saturate), then shifted ones (outputs that centring erases).
VARIATIONS = ((10.0, 0.0), (0.1, 0.0), (1.0, 1.0), (100.0, 0.0), (0.01, 0.0), (1.0, -1.0),
              (10.0, 5.0))


def input_key(seed, transform=None):
    """How a trial's inputs are named in the store: the seed, and the transform of a
    varied trial."""
    if transform is None:
        return str(seed)
    scale, shift = transform
    return f"{seed}x{scale:g}{shift:+g}"


class _TaskFailure(Exception):
    """A step of the task's own code failed: the message says which and why."""


def fitted_sizes(task, device, timeout_s):
    """The one place the reference worker asks the size fitter (fit.py) for sizes under
    task.fit_memory_mb: complete sizes (every module-level integer) to run the task at. Raises protocol.Verdict (task_error) when the task cannot fit or is
    broken."""
    try:
        result = fit.fit(task["path"], task["format"], budget_mb=task["fit_memory_mb"],
                         device=device, base_sizes=task["sizes"],
                         size_scale=task["size_scale"], source=task["source"],
                         timeout_s=timeout_s)
    except fit.CannotFit as exc:
        raise protocol.task_error(f"the task cannot be fitted into {task['fit_memory_mb']:g} MB: "
                                  f"{exc}", ["out_of_memory"]) from None
    except (fit.FitError, ValueError) as exc:  # the task is broken whatever its sizes
        raise protocol.task_error(f"the task fails while its sizes are fitted to "
                                  f"{task['fit_memory_mb']:g} MB: {exc}") from None
    print(f"kforge: fitted sizes {result.sizes}: {result.note}", file=sys.stderr)
    return result.sizes


class Worker:
    def __init__(self, job, device):
        self.job = job
        self.device = device
        self.task = dict(job["task"])
        self.options = job["options"]
        self.session = None
        self.peak = _PeakMemory(device)
        self.input_bytes = 0  # one input set's, for the size of the timing's input pools

    # ---- steps ----

    def compute(self):
        # The fitter forks children that use the device, so it runs before this process
        # initialises it.
        fitted = False
        imported_before = task_modules.snapshot()
        if self.task.get("fit_memory_mb"):
            self.task["sizes"] = fitted_sizes(self.task, self.device,
                                              float(self.job["limits"]["timeout_s"]))
            self.task["size_scale"] = 1.0
            fitted = True
        try:
            self.session = task_session(self.task, self.options, self.device)
            self.session.setup_device()
        except Exception as exc:  # noqa: BLE001
            traceback.print_exc()
            raise protocol.harness_error(f"device setup failed: {type(exc).__name__}: {exc}") from None
        self.peak.start()
        plan = self.job.get("plan")
        # Inputs a session cannot vary (a kernelbenchx test's own, fixed cases included)
        # are judged as they are: no varied trials.
        detector = ConstantDetector(plan["rule"]) if plan and self.session.inputs_can_vary else None
        try:
            reference = self._prepare()
            weights = self._weights(reference)
            outputs = {}
            for index, seed in enumerate(self.job["input_seeds"]):
                outputs[input_key(seed)] = self._outputs(
                    reference, seed, index == 0 and self.job["check_determinism"], detector)
            varied = (self._vary(reference, plan, detector, outputs) if detector
                      else [] if plan else None)
            timing = self._time(reference) if self.job.get("timing") else None
        except _TaskFailure as failure:
            raise self._task_error(str(failure), failure.__cause__) from None
        except Exception as exc:  # noqa: BLE001 - only running out of memory is the task's
            # The worker's own work on the task's tensors (checksums, NaN counts, writing
            # the outputs) ran out of memory: at these sizes the task does not fit here,
            # and out_of_memory lets the client retry it with the device to itself.
            if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
                raise protocol.host_error(
                    f"the harness's scratch filesystem is full: writing the reference's outputs "
                    f"failed ({exc}); free space there, or point TMPDIR at a larger filesystem",
                    flags=[SCRATCH_FULL]) from None
            if errors.classify(errors.report(exc), None) != protocol.OUT_OF_MEMORY:
                raise
            traceback.print_exc()
            raise self._task_error("the harness's checks of the reference's outputs", exc) from None
        params = []
        if isinstance(reference.model, torch.nn.Module):
            params = [[name, list(p.shape)] for name, p in reference.model.named_parameters()]
        return {"status": "pass", "task_sizes": self.session.sizes, "fitted": fitted,
                "peak_mb": self.peak.peak_mb(), "device_memory_mb": self.peak.device_mb(),
                "outputs": outputs, "timing": timing, "params": params, "weights": weights,
                "varied": varied, "input_bytes": self.input_bytes,
                "flags": list(self.session.flags),
                "task_modules": task_modules.collect(imported_before)}

    def _weights(self, reference):
        """Re-initialises the reference's weights from the weight seed (runner.reinitialise)
        and, when the store lacks them, writes them beside its outputs for the candidate
        child: {"names", "leaves", "bytes"} or None when they are stored already."""
        found = []
        if isinstance(reference.model, torch.nn.Module):
            found = self._step("re-initialising Model's weights",
                               lambda: reinitialise(reference.model, self.job["weights_seed"]))
        if not self.job.get("write_weights"):
            return None
        leaves = write_leaves([tensor for _, tensor in found], self.job["entry_dir"],
                              f"w{self.options['seed']}")
        return {"names": [name for name, _ in found], "leaves": leaves,
                "bytes": sum(leaf.get("nbytes", 0) for leaf in leaves)}

    def _vary(self, reference, plan, detector, outputs):
        """The extra trials of a near-constant reference: when one constant would pass
        every trial under the request's rule (KernelBench issue #165: any kernel that
        returns it would pass), trials with scaled and shifted inputs (VARIATIONS) are
        added until the reference's output varies. Returns [[seed, scale, shift], ...]
        (empty when the output varies already); a reference that no variation moves is a
        task_error. Variations that make the reference fail or overflow are skipped."""
        for seed in plan["stored_seeds"]:  # base trials computed by an earlier worker
            self._outputs(reference, seed, False, detector, write=False)
        chosen = []
        for seed, transform in zip(plan["varied_seeds"], VARIATIONS):
            if detector.constant() is None:
                return chosen
            try:
                record = self._outputs(reference, seed, False, detector, transform=transform)
            except (_TaskFailure, protocol.Verdict) as exc:
                print(f"kforge: inputs x*{transform[0]:g}{transform[1]:+g} do not work for the "
                      f"reference ({exc}); trying the next variation", file=sys.stderr)
                continue
            outputs[input_key(seed, transform)] = record
            chosen.append([seed, transform[0], transform[1]])
        constant = detector.constant()
        if constant is None:
            return chosen
        tried = ", ".join(f"x*{s:g}{b:+g}" for s, b in VARIATIONS)
        raise protocol.task_error(
            f"the task's output is (near-)constant: returning {constant:.6g} for every "
            f"element would pass every trial under the comparison rule, also with inputs "
            f"scaled and shifted ({tried}), so no comparison can tell a correct kernel from "
            "that constant (KernelBench issue #165); change the task so that its output "
            "depends on its inputs")

    def _step(self, name, call):
        try:
            return call()
        except (protocol.Verdict, _TaskFailure):
            raise
        except BaseException as exc:  # noqa: BLE001 - the task's code may raise SystemExit
            traceback.print_exc()
            raise _TaskFailure(name) from exc

    def _prepare(self):
        session = self.session
        self._step("loading the task module", session.load)
        self._step("get_init_inputs()", session.make_init_inputs)
        try:
            cls, kind = session.reference_class()
        except MissingFramework as exc:
            raise protocol.task_error(str(exc)) from None
        return self._step("building Model(*get_init_inputs())", lambda: session.build(cls, kind))

    def _outputs(self, reference, seed, check_determinism, detector=None, transform=None,
                 write=True):
        session = self.session
        label = f"input seed {seed}" + (f", inputs x*{transform[0]:g}{transform[1]:+g}" if transform else "")
        inputs = self._step(f"get_inputs() ({label})", lambda: session.make_inputs(seed, transform))
        self.input_bytes = max(self.input_bytes, input_bytes(inputs))
        if check_determinism:
            again = self._step(f"get_inputs() ({label})", lambda: session.make_inputs(seed))
            if anticheat.input_digests(inputs) != anticheat.input_digests(again):
                raise protocol.task_error(
                    "get_inputs() made different inputs from the same seed twice: the "
                    "candidate and the reference could not be given the same inputs; make "
                    "it depend only on torch/NumPy/random's seeded generators")
            del again
        # Feeding runs task code too where the inputs are a function's recorded calls
        # (kbx.FunctionSide): what fails there is the task's.
        fed = self._step(f"preparing the inputs ({label})", lambda: reference.feed(inputs))
        out, changed, aliased = self._step(f"Model.forward ({label})",
                                           lambda: session.observe(reference, fed, seed))
        for index, value in enumerate(out):
            if as_tensor(value) is None:
                what = "None" if value is None else f"a {type(value).__name__}"
                raise protocol.task_error(
                    f"the task's Model.forward returns {what} as output #{index} ({label}), "
                    "not a tensor: there is nothing to compare a candidate with")
        nans = nan_count(out)
        if nans:
            raise protocol.task_error(
                f"the task's reference output contains {nans} NaN value(s) ({label}): NaN "
                "never passes, so no candidate could; fix the task's inputs or sizes")
        if transform is not None and not all_finite(out):
            raise protocol.task_error(f"the reference's output overflows ({label})")
        if detector is not None:
            detector.observe(out)
        if not write:
            return None
        leaves = write_leaves(out, self.job["entry_dir"],
                              f"{self.options['seed']}-{input_key(seed, transform)}")
        return {"leaves": leaves, "mutates_inputs": bool(changed),
                "aliases_inputs": aliased is not None,
                "bytes": sum(leaf.get("nbytes", 0) for leaf in leaves),
                **self.session.output_facts()}

    def _time(self, reference):
        """The reference timed like the candidate: every call on an input set of a pool
        made before the loop (seeds timing_seed, timing_seed + 1, ...), sized alike."""
        timing = self.job["timing"]
        warmup, trials = int(timing["warmup"]), int(timing["trials"])
        timer = Timer(torch, self.device, warmup, trials, bool(timing["flush_l2"]))
        seed = self.job["timing_seed"]
        first = self._step("get_inputs() (timing)", lambda: self.session.make_inputs(seed))
        self.input_bytes = max(self.input_bytes, input_bytes(first))
        del first
        count = pool_size(self.input_bytes, warmup + trials, float(timing["pool_mb"]))
        pool = self._step("get_inputs() (timing)", lambda: InputPool(
            lambda s: reference.feed(self.session.make_inputs(s)),
            [seed + i for i in range(count)]))
        result = self._step("timing the reference", lambda: timer.measure(reference, pool))
        result["measured_at"] = time.time()
        if timing["baseline"] == "compile":
            if self.session.numpy_task or not hasattr(torch, "compile"):
                result["compile_unavailable"] = True
            else:
                compiled = Side(torch.compile(reference.model), "torch", self.session.torch_device)
                result["compile_ms"] = self._step(
                    "timing the torch.compile baseline",
                    lambda: timer.measure(compiled, pool))["ms"]
        return result

    # ---- what went wrong ----

    def _task_error(self, step, exc):
        data = errors.report(exc) if exc is not None else {}
        error_class = errors.classify(data, protocol.RUNTIME_ERROR)
        sizes = ""
        if self.task["sizes"] or self.task["size_scale"] != 1:
            sizes = f" at sizes {self.session.sizes}" if self.session.sizes else ""
        if error_class == protocol.OUT_OF_MEMORY:
            return protocol.task_error(
                f"the task's reference ran out of memory in {step}{sizes}: it needs "
                f"{self.peak.need_text(data)}, the device has {self.peak.device_text(self.job['limits'])} "
                f"({errors.describe(data)}); shrink it with task.sizes, size_scale or "
                "fit_memory_mb, or run it on a bigger device", flags=["out_of_memory"])
        module = data.get("missing_module")
        if module:
            return protocol.task_error(
                f"the task imports {module}, which {sys.executable} cannot import "
                f"({errors.describe(data)}): install {module} for that interpreter, or run "
                "the task where it is installed")
        return protocol.task_error(
            f"the task fails as its own reference in {step}{sizes}: {errors.describe(data)}")


class _PeakMemory:
    """The task's peak memory on the device while the worker runs it: the caching
    allocator's peak reservation on an accelerator, the growth of resident memory on the
    CPU (the peak resident size is reset first where the kernel allows)."""

    def __init__(self, device):
        self.device = device
        self.base = 0

    def start(self):
        if self.device.is_accelerator:
            module = self.device.module(torch)
            if hasattr(module, "reset_peak_memory_stats"):
                module.reset_peak_memory_stats()
            return
        try:
            with open("/proc/self/clear_refs", "w", encoding="ascii") as handle:
                handle.write("5")
        except OSError:
            pass
        self.base = _status_kb("VmRSS:") * 1024

    def peak_bytes(self):
        if self.device.is_accelerator:
            module = self.device.module(torch)
            return module.max_memory_reserved() if hasattr(module, "max_memory_reserved") else 0
        return max(0, _status_kb("VmHWM:") * 1024 - self.base)

    def peak_mb(self):
        return self.peak_bytes() / MB

    def device_mb(self):
        if self.device.is_accelerator:
            module = self.device.module(torch)
            return module.get_device_properties(self.device.index).total_memory / MB
        return _proc_kb("/proc/meminfo", "MemTotal:") / 1024

    def need_text(self, data):
        """What an out-of-memory says about the need: at least the peak so far plus the
        allocation that failed (torch names its size)."""
        if self.device.is_accelerator:
            module = self.device.module(torch)
            held = module.max_memory_allocated() / (1 << 30) if hasattr(module, "max_memory_allocated") else 0.0
            return f"at least {held + errors.requested_gib(data.get('text')):.2f} GiB"
        return f"more than the {_gib(self.peak_bytes())} it reached"

    def device_text(self, limits):
        limit_mb = limits.get("device_memory_mb") or (None if self.device.is_accelerator else limits["memory_mb"])
        total = f"{self.device_mb() / 1024:.2f} GiB"
        if limit_mb:
            return f"{limit_mb / 1024:.2f} GiB for this job (of {total})"
        return total


def _gib(num_bytes):
    return f"{num_bytes / (1 << 30):.2f} GiB"


def _proc_kb(path, field):
    """A "Field:   123 kB" line of /proc/self/status or /proc/meminfo, in kB (0: absent)."""
    with open(path, encoding="ascii") as lines:
        for line in lines:
            if line.startswith(field):
                return int(line.split()[1])
    return 0


def _status_kb(field):
    return _proc_kb("/proc/self/status", field)


def compute(job, device):
    """The worker's result for `job` (raises protocol.Verdict for a broken task)."""
    return Worker(job, device).compute()
