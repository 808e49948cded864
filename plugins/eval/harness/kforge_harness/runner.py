"""The `compile` and `run` actions, inside a child: load the task and the candidate, build
both models with identical weights, run them on the same fresh inputs, compare, check for
cheats, time. Every failure leaves as a protocol.Verdict."""

import contextlib
import os
import random
import sys
import traceback

import numpy as np
import torch

from . import anticheat, errors, protocol, tasks
from .compare import ConstantDetector, compare_outputs, leaves
from .timing import Timer

SPEEDUP_FLAG_LIMIT = 10.0


def seed_everything(seed):
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)  # seeds every device's generator too


def to_torch(obj, device=None):
    """`obj` with NumPy arrays turned into tensors (copies: the arrays stay untouched)
    and every tensor moved to `device`."""
    if isinstance(obj, (list, tuple)):
        return type(obj)(to_torch(item, device) for item in obj)
    if isinstance(obj, np.ndarray):
        obj = torch.from_numpy(obj.copy())
    if isinstance(obj, torch.Tensor):
        return obj.to(device) if device is not None else obj
    return obj


def copy_inputs(obj):
    if isinstance(obj, (list, tuple)):
        return type(obj)(copy_inputs(item) for item in obj)
    if isinstance(obj, torch.Tensor):
        return obj.clone()
    if isinstance(obj, np.ndarray):
        return obj.copy()
    return obj


def as_torch_view(obj):
    """Tensors over the same memory as the NumPy arrays in `obj` (no copy): lets the
    anti-cheat checks treat NumPy and torch values alike."""
    if isinstance(obj, (list, tuple)):
        return [as_torch_view(item) for item in obj]
    if isinstance(obj, np.ndarray):
        return torch.from_numpy(obj)
    return obj


def warm_up(device):
    """What every request pays before its own work, paid ahead in a standby child: the
    device context (CUDA: ~0.2-0.3 s) and the first use of the harness's own kernels
    (comparison, anti-cheat, poisoning), which load lazily, one module each. Triton's
    driver is initialised too where triton is present."""
    torch_device = device.activate(torch)
    sample = torch.linspace(-1.0, 1.0, 64, device=torch_device)
    compare_outputs([sample], [sample.clone()], protocol.DEFAULT_RULE)
    ConstantDetector(protocol.DEFAULT_RULE).observe([sample])
    anticheat.changed_inputs([sample], [sample.clone()])
    anticheat.aliasing([sample], [sample.clone()])
    anticheat.poison_allocator([sample])
    device.synchronize(torch)
    if device.is_accelerator:
        try:
            import triton
        except ImportError:
            return
        triton.runtime.driver.active.get_current_device()


def mindspore_module():
    """MindSpore when this interpreter has it, else None."""
    try:
        import mindspore  # noqa: PLC0415 - optional, and heavy: only for its tasks
    except ImportError:
        return None
    return mindspore


def from_mindspore(obj):
    if isinstance(obj, (list, tuple)):
        return type(obj)(from_mindspore(item) for item in obj)
    return obj.asnumpy() if hasattr(obj, "asnumpy") else obj


class Side:
    """One model under test (reference or candidate) and how it is fed, by `kind`:
    "torch" models get tensors on the device; "numpy" models (the reference of a
    kernelbench-numpy task, or that reference as its own candidate) get arrays;
    "mindspore" models (a kernelbench-mindspore reference) get MindSpore tensors made from
    the arrays and give back arrays."""

    def __init__(self, model, kind, device):
        self.model = model
        self.kind = kind
        self.device = device

    def feed(self, master):
        """This side's own copy of the master inputs."""
        if self.kind == "torch":
            return to_torch(copy_inputs(master), self.device)
        return copy_inputs(master)

    def __call__(self, inputs):
        if self.kind == "numpy":
            forward = getattr(self.model, "forward", None) or self.model
            return forward(*inputs)
        if self.kind == "mindspore":
            tensor = mindspore_module().Tensor
            return from_mindspore(self.model(*[tensor(a) if isinstance(a, np.ndarray) else a for a in inputs]))
        with torch.no_grad():
            return self.model(*inputs)


class Runner:
    def __init__(self, request, reporter, device, workdir):
        self.request = request
        self.reporter = reporter
        self.device = device
        self.workdir = workdir
        self.options = request["options"]
        self.language = request["candidate"]["language"]
        # The master inputs are NumPy arrays (numpy and mindspore tasks), not tensors.
        self.numpy_task = request["task"]["format"] in protocol.ARRAY_INPUT_FORMATS
        self.flags = []  # facts about this request worth reporting with any verdict
        self.candidate_path = None
        self.torch_device = None
        self.task = None
        self.init_inputs = None

    # ---- phases ----

    @contextlib.contextmanager
    def phase(self, name, who, default_class=protocol.RUNTIME_ERROR):
        """Runs a phase; an exception in it becomes the verdict. `who` is whose code runs:
        the candidate's (its failures are verdicts), the reference's (a failure means the
        task is broken) or the harness's own (device setup): in those two cases the
        harness cannot judge (status error)."""
        self.reporter.phase(name)
        try:
            yield
        except protocol.Verdict:
            raise
        except BaseException as exc:  # noqa: BLE001 - candidate code may raise SystemExit
            traceback.print_exc()
            error_class = errors.classify(exc, default_class)
            text = errors.describe(exc, self.candidate_path)
            if who == "reference":
                raise protocol.harness_error(
                    f"the task's reference failed in {name} ({error_class}): {text}"
                    + ("; shrink the task with task.size_scale or task.sizes"
                       if error_class == protocol.OUT_OF_MEMORY else "")) from None
            if who == "harness":
                raise protocol.harness_error(f"{name} failed: {text}") from None
            raise protocol.Verdict(error_class, f"{name}: {text}") from None

    def sync(self):
        self.device.synchronize(torch)

    # ---- setup ----

    def prepare(self):
        """Device, task module and candidate model; returns (reference, candidate)."""
        if self.language == "triton":
            self._require_triton()
        with self.phase("device setup", "harness"):
            self.torch_device = self.device.activate(torch)
            # fp32 references must be fp32: cuDNN convolutions default to TF32, which is
            # off by ~1e-3 at real sizes and would fail exact kernels at atol=rtol=1e-4.
            torch.backends.cudnn.allow_tf32 = False
            torch.backends.cuda.matmul.allow_tf32 = False
        with self.phase("reference load", "reference"):
            self.task, changes = tasks.load_task(self.request["task"])
            for name, (old, new) in changes.items():
                print(f"kforge: task size {name} = {old} -> {new}", file=sys.stderr)
        with self.phase("reference init inputs", "reference"):
            self.init_inputs = list(self._with_default_device(self.task.get_init_inputs))
        reference_class, reference_kind = self._reference()
        candidate = self._candidate_class()
        reference = self._build("reference", reference_class, reference_kind)
        if candidate is None:  # the reference as its own candidate
            return reference, self._build("candidate", reference_class, reference_kind)
        return reference, self._build("candidate", candidate, "torch")

    def _reference(self):
        """The reference model class and its kind. A kernelbench-mindspore task runs its
        MindSpore Model where MindSpore is installed, else its PyTorch fallback
        (class TorchModel in the same file), as seed 000's MindSpore suite did."""
        task_format = self.request["task"]["format"]
        if task_format == "kernelbench-numpy":
            return self.task.Model, "numpy"
        if task_format != "kernelbench-mindspore":
            return self.task.Model, "torch"
        if mindspore_module() is not None and hasattr(self.task, "Model"):
            return self.task.Model, "mindspore"
        if hasattr(self.task, "TorchModel"):
            self.flags.append("reference_fallback_torch")
            return self.task.TorchModel, "torch"
        raise protocol.harness_error(
            "this kernelbench-mindspore task needs MindSpore, which "
            f"{sys.executable} cannot import, and defines no PyTorch fallback: install "
            "MindSpore, or add class TorchModel to the task file")

    def _require_triton(self):
        try:
            import triton  # noqa: F401
        except ImportError as exc:
            raise protocol.harness_error(
                f"triton is not importable by {sys.executable} ({exc}): install triton "
                "(triton-ascend on an NPU host) to evaluate triton candidates") from None

    def _is_reference_candidate(self):
        return self.request["candidate"]["code"] is None

    def _candidate_class(self):
        """ModelNew of the candidate; None when the reference runs as its own candidate."""
        if self._is_reference_candidate():
            return None
        candidate = self.request["candidate"]
        # Only this request's artifact may stand in for kforge_cpp's own compilation.
        if candidate.get("artifact"):
            os.environ["KFORGE_CPP_ARTIFACT"] = candidate["artifact"]
        else:
            os.environ.pop("KFORGE_CPP_ARTIFACT", None)
        self.candidate_path = os.path.abspath(
            tasks.write_candidate(candidate["code"], self.workdir))
        with self.phase("candidate import", "candidate"):
            module = tasks.import_candidate(self.candidate_path)
        if not hasattr(module, "ModelNew"):
            raise protocol.Verdict(protocol.INIT_ERROR,
                                   "the candidate defines no ModelNew class")
        return module.ModelNew

    def _build(self, who, cls, kind):
        """Seeds before the constructor, so equal parameter shapes get equal weights."""
        with self.phase(f"{who} init", who, protocol.INIT_ERROR):
            seed_everything(self.options["seed"])
            if kind == "mindspore":
                mindspore_module().set_seed(self.options["seed"])
            model = cls(*self.init_inputs)
            if isinstance(model, torch.nn.Module):
                model = model.to(self.torch_device)
        return Side(model, kind, self.torch_device)

    def _with_default_device(self, make):
        """Calls get_inputs/get_init_inputs with the target device as torch's default
        device, so big inputs are made where they are used. torch < 2.0 lacks that: there,
        and with inputs_on_device=false, they are made on the host and moved."""
        on_device = (self.device.is_accelerator and self.options["inputs_on_device"]
                     and not self.numpy_task and hasattr(torch, "set_default_device"))
        if on_device:
            with torch.device(self.torch_device):
                return make()
        return make()

    def make_inputs(self, seed):
        seed_everything(seed)
        inputs = list(self._with_default_device(self.task.get_inputs))
        return inputs if self.numpy_task else to_torch(inputs, self.torch_device)

    # ---- actions ----

    def compile(self):
        """Import, build and, for triton, one forward so every kernel gets compiled."""
        _, candidate = self.prepare()
        if self.language == "triton":
            with self.phase("reference get_inputs", "reference"):
                master = self.make_inputs(self.options["seed"] + 1)
            with self.phase("candidate forward (compiling kernels)", "candidate"):
                candidate(candidate.feed(master))
                self.sync()
        return {"status": "pass"}

    def run(self):
        reference, candidate = self.prepare()
        rule = self.options["rule"]
        detector = ConstantDetector(rule)
        max_diffs, mean_diffs = [], []
        for trial in range(self.options["trials"]):
            outcome = self._trial(trial, reference, candidate, rule, detector)
            max_diffs.append(outcome.max_abs_diff)
            mean_diffs.append(outcome.mean_abs_diff)
        metrics = {"max_abs_diff": max(max_diffs),
                   "mean_abs_diff": sum(mean_diffs) / len(mean_diffs),
                   "trials": self.options["trials"]}
        flags = list(self.flags)
        constant = detector.constant()
        if constant is not None and (self._is_reference_candidate() or not detector.elementwise):
            # The task's self-test passes (it runs and is deterministic), and a scalar
            # output that hardly varies is no proof of cheating: flag, do not reject.
            flags.append("reference_near_constant")
        elif constant is not None:
            raise protocol.Verdict(
                protocol.CHEAT_DETECTED,
                "the reference output is (near-)constant: returning the constant "
                f"{constant:.6g} would pass every trial, so this pass proves nothing "
                "(KernelBench issue #165); the task needs inputs that make its output vary",
                metrics=metrics, flags=self.flags + ["reference_near_constant"])
        if self.options["timing"]["enabled"]:
            metrics.update(self._time(reference, candidate, flags))
        return {"status": "pass", "metrics": metrics, "flags": flags}

    def _trial(self, trial, reference, candidate, rule, detector):
        label = f"trial {trial + 1}"
        seed = self.options["seed"] + 1 + trial
        with self.phase(f"reference get_inputs ({label})", "reference"):
            master = self.make_inputs(seed)
        ref_inputs, cand_inputs = reference.feed(master), candidate.feed(master)
        # Trial 1 runs the candidate first: no right answer exists anywhere in memory yet.
        candidate_first = trial == 0
        if candidate_first:
            cand_out = self._forward(candidate, cand_inputs, seed, "candidate", label)
        ref_out = self._forward(reference, ref_inputs, seed, "reference", label)
        if not candidate_first:
            with self.phase(f"poisoning freed memory ({label})", "harness"):
                anticheat.poison_allocator([t for t in ref_out
                                            if isinstance(t, torch.Tensor)
                                            and t.device == self.torch_device])
            cand_out = self._forward(candidate, cand_inputs, seed, "candidate", label)

        # These phases read the candidate's outputs: a fault there is the candidate's.
        with self.phase(f"anti-cheat checks ({label})", "candidate"):
            self._check_cheats(master, ref_inputs, ref_out, cand_inputs, cand_out, label)
        with self.phase(f"comparison ({label})", "candidate"):
            outcome = compare_outputs(ref_out, cand_out, rule)
            detector.observe(ref_out)
        if outcome.error_class == protocol.HARNESS_ERROR:
            raise protocol.harness_error(outcome.message)
        if not outcome.passed:
            metrics = {"failed_trial": trial + 1}
            if outcome.max_abs_diff is not None:
                metrics.update(max_abs_diff=outcome.max_abs_diff,
                               mean_abs_diff=outcome.mean_abs_diff)
            raise protocol.Verdict(outcome.error_class, f"{label}: {outcome.message}",
                                   metrics=metrics)
        return outcome

    def _forward(self, side, inputs, seed, who, label):
        """The forward's outputs as a flat list, NumPy arrays viewed as tensors."""
        with self.phase(f"{who} forward ({label})", who):
            seed_everything(seed)  # same RNG stream for both (dropout-like ops)
            out = side(inputs)
            self.sync()  # device faults surface here, in the phase that caused them
        return as_torch_view(leaves(out))

    def _check_cheats(self, master, ref_inputs, ref_out, cand_inputs, cand_out, label):
        pristine = as_torch_view(master)
        ref_inputs, cand_inputs = as_torch_view(ref_inputs), as_torch_view(cand_inputs)
        reference_mutates = bool(anticheat.changed_inputs(pristine, ref_inputs))
        changed = anticheat.changed_inputs(pristine, cand_inputs)
        if changed and not reference_mutates:
            raise protocol.Verdict(
                protocol.CHEAT_DETECTED,
                f"{label}: the candidate changed input #{changed[0]} in place; the "
                "reference leaves its inputs unchanged")
        # View-like tasks (the reference returns a view of its input) may alias inputs.
        if anticheat.aliasing(ref_out, anticheat.tensors_in(ref_inputs)) is None:
            hit = anticheat.aliasing(cand_out, anticheat.tensors_in(cand_inputs))
            if hit is not None:
                raise protocol.Verdict(
                    protocol.CHEAT_DETECTED,
                    f"{label}: output #{hit[0]} shares memory with input #{hit[1]}; the "
                    "reference's output is new memory")
        hit = anticheat.aliasing(cand_out, anticheat.tensors_in(ref_out))
        if hit is not None:
            raise protocol.Verdict(
                protocol.CHEAT_DETECTED,
                f"{label}: output #{hit[0]} shares memory with the reference's output")

    def _time(self, reference, candidate, flags):
        timing = self.options["timing"]
        timer = Timer(torch, self.device, int(timing["warmup"]), int(timing["trials"]),
                      bool(timing["flush_l2"]))
        seed = self.options["seed"] + 1 + self.options["trials"]
        with self.phase("reference get_inputs (timing)", "reference"):
            master = self.make_inputs(seed)
        ref_inputs, cand_inputs = reference.feed(master), candidate.feed(master)
        with self.phase("reference timing", "reference"):
            ref_ms, ref_p90 = timer.measure(lambda: reference(ref_inputs))
        with self.phase("candidate timing", "candidate"):
            cand_ms, cand_p90 = timer.measure(lambda: candidate(cand_inputs))
        metrics = {"reference_ms": ref_ms, "reference_ms_p90": ref_p90,
                   "candidate_ms": cand_ms, "candidate_ms_p90": cand_p90,
                   "speedup": ref_ms / cand_ms if cand_ms > 0 else float("inf")}
        if metrics["speedup"] > SPEEDUP_FLAG_LIMIT:
            flags.append("speedup_over_10x")
        if timing["baseline"] == "compile":
            metrics.update(self._time_compiled(reference, ref_inputs, timer, cand_ms, flags))
        return metrics

    def _time_compiled(self, reference, ref_inputs, timer, cand_ms, flags):
        if self.numpy_task or not hasattr(torch, "compile"):
            flags.append("compile_baseline_unavailable")
            return {}
        with self.phase("torch.compile baseline timing", "reference"):
            compiled = Side(torch.compile(reference.model), "torch", self.torch_device)
            compile_ms, _ = timer.measure(lambda: compiled(ref_inputs))
        return {"compile_ms": compile_ms,
                "speedup_vs_compile": compile_ms / cand_ms if cand_ms > 0 else float("inf")}
