"""What the task host (host.py) needs of a task beyond running it: the sizes the fitter
chooses, the task's peak memory, the varied trials of a near-constant reference, and the
task_error that says which step of the task's own code failed and why."""

import sys

import torch

from kforge_harness import protocol
from kforge_harness.protocol import errors
from kforge_harness.tasks import fit

MB = 1 << 20

# The (scale, shift) of the extra trials that make a near-constant reference vary, tried
# in this order until no constant passes every trial: bigger and smaller inputs (outputs
# that round to zero, or saturate), then shifted ones (outputs that centring erases).
VARIATIONS = ((10.0, 0.0), (0.1, 0.0), (1.0, 1.0), (100.0, 0.0), (0.01, 0.0), (1.0, -1.0),
              (10.0, 5.0))

# Draws of the weights (the first included) a plan tries before a task whose output
# carries no information at any input is a task_error: an output that a drawn bias
# saturates at half of the draws is judged in all but 1 run in 32.
WEIGHT_DRAWS = 5


def input_key(seed, transform=None):
    """How a trial's inputs are named: the seed, and the transform of a varied trial."""
    if transform is None:
        return str(seed)
    scale, shift = transform
    return f"{seed}x{scale:g}{shift:+g}"


class TaskFailure(Exception):
    """A step of the task's own code failed: the message says which and why."""


def fitted_sizes(task, device, timeout_s):
    """The one place the task host asks the size fitter (fit.py) for sizes under
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


def task_error(host, step, exc):
    """The task_error for a step of the task's own code that failed with `exc` (None: no
    exception): out of memory, a missing module, or the task failing as its own
    reference. `host`: the task host (its task spec, session, peak memory and job)."""
    data = errors.report(exc) if exc is not None else {}
    error_class = errors.classify(data, protocol.RUNTIME_ERROR)
    sizes = ""
    if host.task["sizes"] or host.task["size_scale"] != 1:
        sizes = f" at sizes {host.session.sizes}" if host.session.sizes else ""
    if error_class == protocol.OUT_OF_MEMORY:
        return protocol.task_error(
            f"the task's reference ran out of memory in {step}{sizes}: it needs "
            f"{host.peak.need_text(data)}, the device has {host.peak.device_text(host.job['limits'])} "
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


class PeakMemory:
    """The task's peak memory on the device while the task host runs it: the caching
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

    def held_mb(self):
        """What the process holds of the device now (its allocator's reservation; the
        lent buffers are counted by the jobs that use them)."""
        if self.device.is_accelerator:
            module = self.device.module(torch)
            return module.memory_reserved() / MB if hasattr(module, "memory_reserved") else 0.0
        return 0.0

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
