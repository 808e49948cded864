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

from . import anticheat, errors, fit, protocol
from .outputs import SCRATCH_FULL, as_tensor, write_leaves
from .runner import MissingFramework, Side, nan_count, task_session
from .timing import InputPool, Timer, input_bytes, pool_size

MB = 1 << 20


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
    except (fit.FitError, ValueError) as exc:
        flags = ["out_of_memory"] if isinstance(exc, fit.CannotFit) else []
        raise protocol.task_error(f"the task cannot be fitted into "
                                  f"{task['fit_memory_mb']:g} MB: {exc}", flags) from None
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
        try:
            reference = self._prepare()
            outputs = {str(seed): self._outputs(reference, seed, index == 0 and self.job["check_determinism"])
                       for index, seed in enumerate(self.job["input_seeds"])}
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
                "outputs": outputs, "timing": timing, "params": params,
                "input_bytes": self.input_bytes,
                "flags": list(self.session.flags)}

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

    def _outputs(self, reference, seed, check_determinism):
        session = self.session
        label = f"input seed {seed}"
        inputs = self._step(f"get_inputs() ({label})", lambda: session.make_inputs(seed))
        self.input_bytes = max(self.input_bytes, input_bytes(inputs))
        if check_determinism:
            again = self._step(f"get_inputs() ({label})", lambda: session.make_inputs(seed))
            if anticheat.input_digests(inputs) != anticheat.input_digests(again):
                raise protocol.task_error(
                    "get_inputs() made different inputs from the same seed twice: the "
                    "candidate and the reference could not be given the same inputs; make "
                    "it depend only on torch/NumPy/random's seeded generators")
            del again
        fed = reference.feed(inputs)
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
        leaves = write_leaves(out, self.job["entry_dir"], f"{self.options['seed']}-{seed}")
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
        ms, p90 = self._step("timing the reference", lambda: timer.measure(reference, pool))
        result = {"ms": ms, "p90": p90, "measured_at": time.time()}
        if timing["baseline"] == "compile":
            if self.session.numpy_task or not hasattr(torch, "compile"):
                result["compile_unavailable"] = True
            else:
                compiled = Side(torch.compile(reference.model), "torch", self.session.torch_device)
                result["compile_ms"], _ = self._step(
                    "timing the torch.compile baseline",
                    lambda: timer.measure(compiled, pool))
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
