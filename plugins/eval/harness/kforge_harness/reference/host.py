"""The task host: a trusted, long-lived child of the server that holds one task at its
sizes on the device, for as long as that task's candidates need it.

It runs only the task's own code. When it starts it fits the task's sizes if asked,
loads the task, builds the reference Model under the model seed (runner.build: default
constants of initialisers drawn from that seed, so that a ModelNew built the same way has
the same weights, and one that ignores a weight of ones is caught), self-tests it and
computes the reference's outputs for the trials. It keeps those outputs where they are
(on the device) within its budget and recomputes beyond it. Then, for each candidate (or
the reference's own timing child) it serves a session:

- `open`: buffers the child works in (handover: exported device memory on CUDA, a
  sealed memfd elsewhere): two input slots, one output slot, the reference's weights,
  and on CUDA the arena the child's allocator takes its memory from (handover/arena.py:
  "arena_mb", the task's peak as the server admits it).
- `fill`: a trial's or a timed call's inputs made by the task's get_inputs() from a seed
  the child never learns, written into a slot (a trial's, with their digest kept) or,
  for a timed call, kept in this process's own memory (as made, or in a staging
  buffer where they are many tensors: MAX_TENSORS_KEPT); a trial's output slot
  poisoned (every byte 0xFF: NaN for floating types). A kernelbenchx timed call's inputs are the
  arguments of the function's calls that a run of the test code on the seed makes
  (kbx_calls.Unit, kept for `after`); a kernelbenchx trial's are made in the child.
- `publish`: a timed call's output slot poisoned (unless its outputs are read out of the
  child) and its staged inputs copied into its slot, once the server's bracket around the
  call has opened. Until then no memory the child maps holds them:
  whatever of the candidate's runs while its processes are frozen (a kernel that
  outlives its call runs on the device, frozen or not; a process that escaped a stop
  signal) finds the previous call's inputs, so work on a call's inputs is always inside
  that call's bracket, where the server's clock sees it.
- `judge`: a trial. The output slot is read in chunks copied before they are compared
  (outputs.SnapshotLeaf), against the reference's outputs for that seed, under the
  request's rule; the input slot's digest must be unchanged (unless the reference's own
  forward changes that input).
- `take`: a timed call's outputs copied into this process's own buffer, out of the
  arena at the offsets the child's ring names (handover/arena.py), or out of the slot,
  as soon as the child rang the session's doorbell (handover/doorbell.py: between
  commands, the host watches the bells of the calls it published), or, where it did not,
  out of the slot when the server asks; the server's bracket around the call closes when
  the copy is done. What is judged is that copy: whatever the candidate writes into
  the slot afterwards (a kernel that outlived its report, in a context of its own) is
  neither judged nor timed, and work it finished before the copy is inside the bracket.
- `after` (or `step`: `after`, then the next call's `fill`): a timed call, on the outputs
  `take` copied. Every call: no
  poison left in floating outputs (the whole output was written before the child said
  the call was done), and a kernelbenchx unit's results named as the reference's. A
  checked call (drawn by the server, secretly, independently per call), and every call
  whose outputs are byte for byte those of an earlier call (a memo, a cache, a constant:
  its inputs were new), is also compared with the reference on the same inputs, computed
  now (a kernelbenchx unit: the reference function over fresh copies of the arguments
  handed over), and its inputs must be unchanged (but those the reference changes in
  place, which a kernelbenchx unit compares as results).

Commands arrive as JSON lines on its command pipe, each {"id": n, VERB: {...}}; each gets
one line back on its socket, {"id": n, "result": {...}} (a verdict or data), `open`'s
with the buffers' descriptors attached (SCM_RIGHTS). Its first line is {"ready": facts}
after the self-test, or {"failed": verdict} (a task_error, or the harness's own failure
to set up the device), after which it exits. What the task's code does wrong is the
task's; this process never runs candidate code and never reads a candidate object: only
bytes the child left in buffers this process owns."""

import gc
import secrets
import sys
import time
import traceback

import torch

from kforge_harness import handover, protocol
from kforge_harness.handover import read as outputs_read, tree
from kforge_harness.handover.arena import REGION
from kforge_harness.handover.doorbell import Doorbell, Table, Unheard
from kforge_harness.anticheat import buffers, observe
from kforge_harness.anticheat.answer import AnswerHold
from kforge_harness.judge import compare
from kforge_harness.judge.outputs import SnapshotLeaf, TensorLeaf, as_tensor, dtype_name
from kforge_harness.protocol import errors
from kforge_harness.reference.reference import (PeakMemory, TaskFailure, VARIATIONS, fitted_sizes,
                                                input_key, task_error)
from kforge_harness.tasks import kbx, kbx_calls, task_modules
from kforge_harness.tasks.runner import (MissingFramework, all_finite, nan_count, task_session,
                                         weight_tensors)

INPUT_SLOTS = 2
# A timed call's inputs of at most this many tensors wait for `publish` as get_inputs()
# made them, each copied into its slot there; more wait in a staging buffer, copied
# into the slot at once (the copies are inside the call's bracket: one per tensor would
# cost a kernelbenchx unit of thousands of arguments milliseconds a call). Kept as made,
# a call's inputs cross the device's memory twice less (for level 1's matrix-vector
# task, 8 GiB of inputs a call).
MAX_TENSORS_KEPT = 16
# Larger than any current GPU's L2 (H100: 50 MB, H200: 60 MB): writing it evicts the
# inputs and weights an earlier call left in the cache.
L2_FLUSH_BYTES = 256 * 1024 * 1024
# The places a session's copy plans are kept for (Host._copy_plan): an honest child's
# outputs lie in one or two (its calls alternate input slots).
MAX_COPY_PLANS = 64


def _tensor_shapes(unit):
    """The dtypes and shapes of a kernelbenchx timed unit's tensors, arguments and results."""
    return [(leaf.dtype, tuple(leaf.shape)) for layout in (unit.layout, unit.output_layout)
            for leaf in layout.leaves if leaf.kind == "tensor"]


class HostFailure(Exception):
    """The host cannot go on (its verdict has been sent)."""


class Session:
    """One child's buffers: input slots, the output slot, the weights."""

    def __init__(self, number, inputs, output, weights, doorbell, arena, host_inputs):
        self.number = number
        self.inputs = inputs
        # Per slot, its host-memory twin for a kernelbenchx unit's CPU arguments on an
        # accelerator (handover.Leaf.host), or empty.
        self.host_inputs = host_inputs
        self.output = output
        self.weights = weights
        self.arena = arena  # the child's device memory (handover/arena.py), or None
        self.doorbell = doorbell  # rung by the child when a timed call's outputs are in the slot
        self.listening = False  # a timed call published, its outputs to be copied when it rings
        self.rung_at = None  # or the moment they were copied, the bell having rung
        self.ring_failed = None  # or why that copy failed (raised by the next `take`)
        self.ring_unread = None  # or why the ring named no outputs that could be copied
        self.digests = [None] * len(inputs)  # per slot: the digests of what was filled
        self.layouts = [None] * len(inputs)  # per slot: the input layout filled
        self.output_layout = None  # the layout of the outputs expected of the last fill
        self.outputs_seen = set()  # digests of every output the child handed over
        self.held = None  # (input key, record) of a trial's outputs beyond the budget
        self.units = {}  # per slot: the kernelbenchx unit filled there (kbx_calls.Unit)
        self.sampler = buffers.Sampler()  # which output elements the fingerprints read
        self.staging = None  # a timed call's inputs until published, where not kept as made
        # Per slot, a timed call's inputs not yet published: (the (slot view, tensor) pairs
        # of inputs kept as get_inputs() made them, the bytes staged for the rest).
        self.staged = {}
        self.taken = None  # the last timed call's outputs as `take` copied them
        # Per place a timed call's outputs lay (the ring's offsets), what `take` copies
        # (Host._copy_plan), for the output layout they were made for.
        self.copy_plans, self.plans_layout = {}, None
        # Per slot: the layouts a timed call's fill last sent (the child keeps what it made
        # of them), and the reference's outputs the timed calls' output layout was made of.
        self.sent_layouts = {}
        self.timed_output = None  # (record, its output layout)

    def mappings(self):
        return [m for m in (*self.inputs, *self.host_inputs, self.output, self.weights,
                            self.doorbell, self.arena) if m is not None]

    def host_twin(self, slot):
        return self.host_inputs[slot] if self.host_inputs else None

    def close(self):
        self.staging = self.taken = None
        for mapping in self.mappings():
            mapping.close()


class PrivateBuffer:
    """A buffer of this process alone, laid out as a slot (handover.views reads `raw` and
    `nbytes`): never exported, so no candidate maps it. A timed call's inputs wait in one
    until published; its outputs are judged from one."""

    def __init__(self, nbytes, device):
        self.nbytes = nbytes
        self.raw = torch.empty(nbytes, dtype=torch.uint8,
                               device=device.name if device.is_accelerator else "cpu")


class Host:
    def __init__(self, job, device, channel):
        self.job = job
        self.device = device
        self.channel = channel
        self.task = dict(job["task"])
        self.options = job["options"]
        self.keep_bytes = int(job.get("keep_bytes", 0))
        self.session = None
        self.reference = None
        self.l2_flush = None  # the buffer publish() writes to flush a GPU's L2, once timed
        self._answer_hold = None  # anticheat/answer.py: the device held for an answer to a ring
        self.peak = PeakMemory(device)
        self.kept = {}  # input_key -> {"outputs": [contiguous tensors], "facts": {...}}
        self.kept_bytes = 0
        self.recomputed = 0
        self.sessions = {}
        self.next_session = 0
        self.input_capacity = 0
        self.output_capacity = 0
        self.weights_layout = None
        self.weights_values = []
        self.handover_kind = None
        # The inputs' leaves (as they cross by buffer: handover/tree.py) the reference's
        # own forward changes, which a candidate's may change too.
        self.mutated = set()
        self.plans = {}  # rule key -> varied trials
        self.leaf_facts = {}  # rule key -> per output leaf, compare's facts (centre, noise)
        self.uninformed = None  # why the last plan found no information, if it did not

    # ---- start ----

    def start(self):
        """The self-test; returns the facts the server keeps (raises protocol.Verdict)."""
        fitted = False
        imported_before = task_modules.snapshot()
        if self.task.get("fit_memory_mb"):
            # The fitter forks children that use the device: before this process does.
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
        self.handover_kind = handover.kind_for(self.device)
        try:
            self.reference = self._prepare()
            self._weights()
            first = self.job["input_seeds"][0]
            inputs = self._make_inputs(first, None, check_determinism=True)
            self._outputs(first, None, inputs)
            timing = self._plan_units(first)
        except TaskFailure as failure:
            raise task_error(self, str(failure), failure.__cause__) from None
        except Exception as exc:  # noqa: BLE001 - only running out of memory is the task's
            if errors.classify(errors.report(exc), None) != protocol.OUT_OF_MEMORY:
                raise
            traceback.print_exc()
            raise task_error(self, "the harness's checks of the reference's outputs", exc) from None
        layout = self.input_layout(inputs)
        self.input_capacity = max(layout.nbytes if layout is not None else 0, self.input_capacity)
        # Inputs made in the child (values no layout describes, an object of the task's
        # own: handover/tree.py) are held by the child alone: no one checks that a call
        # left them unchanged (README, "What it does not protect"). A kernelbenchx unit
        # checks its arguments itself.
        flat = tree.flatten(inputs)
        unchecked = ["inputs_unchecked"] if (flat is None or flat.unchecked) \
            and not self.session.replays_calls else []
        return {"task_sizes": self.session.sizes, "fitted": fitted,
                "peak_mb": self.peak.peak_mb(), "device_memory_mb": self.peak.device_mb(),
                "flags": list(self.session.flags) + unchecked,
                "task_modules": task_modules.collect(imported_before),
                "inputs_in_child": layout is None, "input_bytes": self.input_capacity,
                "output_bytes": self.output_capacity, "handover": self.handover_kind,
                "can_compile": not self.session.numpy_task and hasattr(torch, "compile"),
                "can_vary": self.session.inputs_can_vary, **timing}

    def _plan_units(self, first):
        """A kernelbenchx task's timed units at two seeds (the first trial's and a fresh
        one): the calls left out of every unit (the same at both), the buffers' sizes,
        and what the server says of them: {"timed_unit": {"calls", "left_out", "why"}},
        and "timing_refused" (why) when no call is left to time. Nothing for other
        formats, whose timed call is one forward."""
        if not self.session.replays_calls:
            return {}
        units = self._step("the task's test code (its calls recorded for timing)",
                           lambda: self.session.plan_timing(self.reference, [first, secrets.randbelow(1 << 62)]))
        self.input_capacity = max(unit.layout.nbytes for unit in units)
        self.output_capacity = max(self.output_capacity, *(unit.output_layout.nbytes for unit in units))
        unit = units[0]
        why = kbx_calls.left_out_text(unit.left_out)
        facts = {"timed_unit": {"calls": len(unit.calls), "left_out": len(unit.left_out), "why": why}}
        if not unit.calls:
            facts["timing_refused"] = (
                f"no call of the function by the task's test code can be timed ({why})" if why else
                "the task's test code never calls the function")
        elif any(_tensor_shapes(other) != _tensor_shapes(unit) for other in units[1:]):
            # Its buffers are lent before the loop, sized by these runs: a later run's
            # larger arguments would not fit (the task is not at fault, nor the candidate).
            facts["timing_refused"] = (
                "the task's test code calls the function with tensors of other sizes at every "
                "run, so its timed calls cannot be given buffers sized in advance")
        return facts

    def _step(self, name, call):
        try:
            return call()
        except (protocol.Verdict, TaskFailure):
            raise
        except BaseException as exc:  # noqa: BLE001 - the task's code may raise SystemExit
            traceback.print_exc()
            raise TaskFailure(name) from exc

    def _prepare(self):
        session = self.session
        self._step("loading the task module", session.load)
        self._step("get_init_inputs()", session.make_init_inputs)
        try:
            cls, kind = session.reference_class()
        except MissingFramework as exc:
            raise protocol.task_error(str(exc)) from None
        return self._step("building Model(*get_init_inputs())", lambda: session.build(cls, kind))

    def _weights(self):
        """The reference's weights as a layout (runner.weight_tensors: what a ModelNew
        built the same way holds too, and what the child copies where its own differ)."""
        found = weight_tensors(self.reference.model) if isinstance(self.reference.model, torch.nn.Module) else []
        described = [("tensor", dtype_name(t.dtype), tuple(t.shape), t.numel() * t.element_size(), None, False)
                     for _, t in found]
        layout = handover.Layout.pack(described)
        for (name, _), leaf in zip(found, layout.leaves):
            leaf.name = name
        self.weights_layout = layout
        self.weights_values = [t for _, t in found]

    # ---- inputs and the reference's outputs ----

    def _label(self, seed, transform):
        if transform is None:
            return f"input seed {seed}"
        return f"input seed {seed}, inputs x*{transform[0]:g}{transform[1]:+g}"

    def _make_inputs(self, seed, transform, check_determinism=False):
        label = self._label(seed, transform)
        inputs = self._step(f"get_inputs() ({label})", lambda: self.session.make_inputs(seed, transform))
        if check_determinism:
            again = self._step(f"get_inputs() ({label})", lambda: self.session.make_inputs(seed, transform))
            if observe.input_digests(inputs) != observe.input_digests(again):
                raise protocol.task_error(
                    "get_inputs() made different inputs from the same seed twice: the "
                    "candidate and the reference could not be given the same inputs; make "
                    "it depend only on torch/NumPy/random's seeded generators")
        return inputs

    def _forward(self, seed, transform, inputs, observed=True):
        """The reference's outputs for these inputs (the inputs are left as they were
        unless the reference's own forward changes them), checked: tensors, no NaN.
        `observed`: which inputs the forward changes is noted (a digest of every input
        before and after); a timed call's spot check needs no more than its trials saw."""
        label = self._label(seed, transform)
        fed = self._step(f"preparing the inputs ({label})", lambda: self.reference.feed(inputs))
        if observed:
            out, changed, _ = self._step(f"Model.forward ({label})",
                                         lambda: self.session.observe(self.reference, fed, seed))
            self.mutated.update(changed)
        else:
            out = self._step(f"Model.forward ({label})",
                             lambda: self.session.forward(self.reference, fed, seed))
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
        tensors = [as_tensor(value).detach().resolve_conj().resolve_neg().contiguous() for value in out]
        return tensors, self.session.output_facts()

    def _outputs(self, seed, transform, inputs=None, session=None):
        """The reference's outputs and facts for (seed, transform): kept ones, or computed
        now: kept while they fit the budget, else held by `session` for its current trial
        only (its judge reads them; the next trial replaces them)."""
        key = input_key(seed, transform)
        if key in self.kept:
            return self.kept[key]
        if session is not None and session.held is not None and session.held[0] == key:
            return session.held[1]
        if inputs is None:
            inputs = self._make_inputs(seed, transform)
        tensors, facts = self._forward(seed, transform, inputs)
        record = {"outputs": tensors, "facts": facts}
        nbytes = sum(t.numel() * t.element_size() for t in tensors)
        self.output_capacity = max(self.output_capacity, self.output_layout(tensors).nbytes)
        if self.kept_bytes + nbytes <= self.keep_bytes or not self.kept:
            self.kept[key] = record
            self.kept_bytes += nbytes
        else:
            self.recomputed += 1
            if session is not None:
                session.held = (key, record)
        return record

    @staticmethod
    def input_layout(inputs):
        """The layout an input set crosses in (inputs nested in lists, tuples and dicts
        as their flat leaves and a skeleton, values no layout describes made by the child
        from the seed: handover/tree.py), or None when nothing in it can cross by buffer
        (a kernelbenchx test run: the child makes such inputs itself from the seed)."""
        flat = tree.flatten(inputs)
        if flat is None:
            return None
        described = []
        for value in flat.leaves:
            if isinstance(value, tree.PLAIN):
                described.append(("value", "", (), 0, value, False))
            else:
                tensor = as_tensor(value)
                described.append(("tensor", dtype_name(tensor.dtype), tuple(tensor.shape),
                                  tensor.numel() * tensor.element_size(), None,
                                  not isinstance(value, torch.Tensor)))
        return handover.Layout.pack(described, flat.tree)

    @staticmethod
    def _leaves(inputs):
        """The leaves of inputs that cross by buffer, in their layout's order."""
        return tree.flatten(inputs).leaves

    @staticmethod
    def output_layout(tensors):
        return handover.Layout.pack(
            ("tensor", dtype_name(t.dtype), tuple(t.shape), t.numel() * t.element_size(), None, False)
            for t in tensors)

    # ---- sessions ----

    def open(self, request):
        """A session's buffers; returns (result, mappings whose descriptors go along)."""
        inputs = [] if self.input_capacity == 0 else [
            handover.allocate(self.input_capacity, self.device, self.handover_kind)
            for _ in range(INPUT_SLOTS)]
        output = handover.allocate(self.output_capacity, self.device, self.handover_kind)
        weights = None
        if self.weights_values:
            weights = handover.allocate(self.weights_layout.nbytes, self.device, self.handover_kind)
            for view, value in zip(handover.views(weights, self.weights_layout), self.weights_values):
                view.copy_(value)
            self.device.synchronize(torch)
        arena = None
        arena_mb = float(request.get("arena_mb") or 0)
        if self.handover_kind == handover.DEVICE and arena_mb > 0:
            arena = handover.allocate(int(arena_mb * (1 << 20)), self.device, self.handover_kind)
        host_inputs = []
        if inputs and self.session.replays_calls and self.handover_kind != handover.HOST:
            # A unit's CPU arguments lie in host memory the child uses as it is: a copy of
            # them in the child would be its work in the call's bracket, which the
            # reference's gap would refund and a candidate's loop could leave out.
            host_inputs = [handover.allocate(self.input_capacity, self.device, handover.HOST)
                           for _ in inputs]
        self.next_session += 1
        session = Session(self.next_session, inputs, output, weights, Doorbell(), arena, host_inputs)
        self.sessions[session.number] = session
        buffers = [handover.describe(m, role) for m, role in
                   [*((m, f"input{i}") for i, m in enumerate(inputs)),
                    *((m, f"input{i}_host") for i, m in enumerate(host_inputs)), (output, "output"),
                    *([(weights, "weights")] if weights is not None else []),
                    (session.doorbell, "doorbell"),
                    *([(arena, "arena")] if arena is not None else [])]]
        return ({"session": session.number, "buffers": buffers,
                 "weights": self.weights_layout.to_json() if weights is not None else None},
                session.mappings())

    def close(self, request):
        session = self.sessions.pop(request["session"], None)
        if session is not None:
            session.held = None
            session.close()
            if self.device.is_accelerator and not self.sessions:
                # What the sessions held goes back to the device, for the jobs beside.
                self.device.module(torch).empty_cache()
        return {"closed": True}

    def _session(self, request):
        session = self.sessions.get(request.get("session"))
        if session is None:
            raise protocol.harness_error(f"no session {request.get('session')!r}")
        return session

    def fill(self, request):
        """A slot filled with the inputs of (seed, transform), the output slot poisoned;
        returns the layouts the child reads and writes. A trial's reference outputs are
        computed first (from the same inputs, before the child may touch them). A
        kernelbenchx timed call's inputs are the arguments of the function's calls that a
        run of the test code on the seed makes (kbx_calls.Unit, kept for `after`)."""
        started = time.perf_counter()
        session = self._session(request)
        seed, transform = request["seed"], request.get("transform")
        slot = int(request["slot"])
        label = self._label(seed, transform)
        if request.get("trial"):
            session.held = None
            inputs = self._make_inputs(seed, transform)
            record = self._outputs(seed, transform, inputs, session)
            inputs = self._make_inputs(seed, transform) if self.mutated else inputs
            output_layout = self.output_layout(record["outputs"])
            layout = self.input_layout(inputs) if session.inputs else None
            described = layout.to_json() if layout is not None else None
        elif self.session.replays_calls:
            unit = self._step(f"the task's test code ({label})",
                              lambda: self.session.timed_unit(self.reference, seed))
            session.units[slot] = unit
            inputs, layout, output_layout = unit.copies, unit.layout, unit.output_layout
            described = unit.describe()
        else:
            inputs = self._make_inputs(seed, transform)
            record = next(iter(self.kept.values()), None) or self._outputs(
                self.job["input_seeds"][0], None)
            if session.timed_output is None or session.timed_output[0] is not record:
                session.timed_output = (record, self.output_layout(record["outputs"]))
            output_layout = session.timed_output[1]
            layout = self.input_layout(inputs) if session.inputs else None
            described = layout.to_json() if layout is not None else None
        if output_layout.nbytes > session.output.nbytes:
            raise protocol.task_error(
                f"the reference's outputs for {label} are larger than for the first trial's "
                f"seed: {self._same_shapes()}")
        if layout is not None and layout.nbytes > (session.inputs[slot].nbytes if session.inputs else 0):
            raise protocol.task_error(f"the inputs for {label} are larger than for the first "
                                      f"trial's seed: {self._same_shapes()}")
        if session.inputs and layout is None and not self.session.replays_calls:
            raise protocol.task_error(f"get_inputs() made inputs for {label} of other kinds than "
                                      f"for the first trial's seed: {self._same_shapes()}")
        if layout is not None and layout.leaves:
            kept = (not request.get("trial") and
                    sum(leaf.kind == "tensor" for leaf in layout.leaves) <= MAX_TENSORS_KEPT)
            host = session.host_twin(slot)
            views = handover.views(session.inputs[slot], layout, arrays=False, host=host)
            if kept:
                # This process's own tensors, which no candidate maps, until `publish`;
                # on the slot's device already (made on the host, they would cross to it
                # inside the bracket).
                session.staged[slot] = ([handover.writable(view, as_tensor(value).to(view.device))
                                         for view, value in zip(views, self._leaves(inputs))
                                         if isinstance(view, torch.Tensor)], 0)
            elif request.get("trial"):
                for view, value in zip(views, self._leaves(inputs)):
                    if isinstance(view, torch.Tensor):
                        handover.fill(view, as_tensor(value))
            else:
                # Staged whole in a buffer of the slot's size, but for what lies in the
                # host twin, kept as made.
                if session.staging is None:
                    session.staging = PrivateBuffer(session.inputs[slot].nbytes, self.device)
                pairs = []
                staged = handover.views(session.staging, layout, arrays=False)
                for leaf, view, stage, value in zip(layout.leaves, views, staged, self._leaves(inputs)):
                    if not isinstance(view, torch.Tensor):
                        continue
                    if leaf.host and host is not None:
                        pairs.append(handover.writable(view, as_tensor(value)))
                    else:
                        handover.fill(stage, as_tensor(value))
                session.staged[slot] = (pairs, layout.nbytes)
            # A trial's inputs are checked by digest after it; a timed call's, when it is
            # checked, against the same seed's inputs made again (no pass over the inputs
            # for the calls that are not).
            session.digests[slot] = buffers.digests(views) if request.get("trial") else None
            session.layouts[slot] = layout
        if request.get("trial"):
            # A timed call's output slot is poisoned when its inputs are published, inside
            # its bracket (publish): the child is awake between this fill and the bracket
            # (the call's preparation), and GPU work it queued runs whenever it likes.
            buffers.poison(session.output)
        session.output_layout = output_layout
        self.device.synchronize(torch)
        # Its own time, so that the server can tell its exchange with this process (the
        # machine's load at that moment) from the work.
        if request.get("trial"):
            return {"inputs": described, "output": output_layout.to_json() if output_layout.leaves else None,
                    "host_ms": (time.perf_counter() - started) * 1e3}
        described, values = self._seeded_apart(described, layout)
        # As JSON text, made here (in host_ms): the server relays one string, and the
        # round trip it measures as the machine's load (exchange_now) holds no encoding
        # or decoding of thousands of numbers (20000: about 23 ms).
        filled = {"input_values": protocol.encode(values).rstrip("\n")} if values is not None else {}
        # The output layout is made once per reference record (Session.timed_output): the
        # same object while the record is.
        if request.get("known") and session.sent_layouts.get(slot) == (described, output_layout):
            # The same layouts as this slot's last timed call: not sent again. This reply
            # is what the server's trusted round trip (`exchange_now`, taken off the next
            # call's bracket) is measured on; at thousands of leaves their JSON took
            # milliseconds, which the server counted as the machine's load.
            filled["layouts_unchanged"] = True
        else:
            session.sent_layouts[slot] = (described, output_layout)
            filled.update(inputs=described, output=output_layout.to_json() if output_layout.leaves else None)
        return dict(filled, host_ms=(time.perf_counter() - started) * 1e3)

    def _seeded_apart(self, described, layout):
        """A timed call's inputs' description without the values made from its seed (a
        number get_inputs() returns, a kernelbenchx unit's calls), and those values
        (None where there are none): the description goes to the child while the call
        is prepared, outside its bracket; the values with the call."""
        if self.session.replays_calls:
            return {"layout": described["layout"], "calls": None}, described["calls"]
        if layout is None or all(leaf.kind == "tensor" for leaf in layout.leaves):
            return described, None
        public = handover.Layout([handover.Leaf("value") if leaf.kind == "value" else leaf
                                  for leaf in layout.leaves], layout.tree)
        return public.to_json(), [handover.value_to_json(leaf.value) for leaf in layout.leaves
                                  if leaf.kind == "value"]

    def _same_shapes(self):
        if self.session.replays_calls:
            return ("the test code's calls of the function must take arguments of the same "
                    "shapes at every seed (their buffers are lent sized by the first runs)")
        return "get_inputs() must make inputs of the same kinds and shapes for every seed"

    def _trial_inputs_verdict(self, session, slot, label):
        """A trial's inputs against their digests taken when the slot was filled."""
        if not session.inputs or session.digests[slot] is None:
            return None
        layout = session.layouts[slot]
        views = handover.views(session.inputs[slot], layout, arrays=False, host=session.host_twin(slot))
        changed = buffers.changed_inputs(views, session.digests[slot], self.mutated)
        return buffers.inputs_verdict(label, changed, False, layout.tree)

    def _candidate_leaves(self, session, taken=False):
        """The child's outputs as compared: a trial's from the slot, each chunk copied as
        it is read; a timed call's (`taken`) from the copy `take` made."""
        if taken:
            return [TensorLeaf(view) if isinstance(view, torch.Tensor) else view
                    for view in handover.views(session.taken, session.output_layout)]
        return [SnapshotLeaf(view) if isinstance(view, torch.Tensor) else view
                for view in handover.views(session.output, session.output_layout)]

    def take(self, request):
        """A timed call's outputs out of the slot (the module's docstring), or, with
        "read": {"pid", "addresses"}, out of the stopped child's own memory where it said
        its outputs lie (handover/read.py); returns when the copy is done, with that moment
        on the clock the server's bracket reads. A read that fails is {"unread": why}."""
        session = self._session(request)
        reading = request.get("read")
        if reading is not None:
            why = self._read_outputs(session, reading)
            if why is not None:
                return {"unread": why}
            return {"taken_at": time.monotonic(), "from": "read"}
        session.listening = False
        if session.ring_failed is not None:
            failure, session.ring_failed = session.ring_failed, None
            raise failure
        if session.ring_unread is not None:
            why, session.ring_unread = session.ring_unread, None
            return {"unread": why}
        if session.rung_at is not None:  # copied when the child rang (handover/doorbell.py)
            (taken_at, source), session.rung_at = session.rung_at, None
            return {"taken_at": taken_at, "from": source}
        # Not rung: copied now, the device held for this answer as for a ring's.
        heard = self._heard()
        return {"taken_at": self._copy_out(session, heard, self._copy_plan(session, None)), "from": "slot"}

    def _heard(self):
        """The moment this process heard that a timed call's outputs are ready (a ring, a
        `take`), and on an accelerator the device held for its answer from then on
        (anticheat/answer.py)."""
        heard_at = time.monotonic()
        if not self.device.is_accelerator:
            return heard_at, None
        if self._answer_hold is None:
            self._answer_hold = AnswerHold(self.device, torch)
        self._answer_hold.begin()
        return heard_at, self._answer_hold

    def _copy_out(self, session, heard, plan):
        """A timed call's outputs copied into this process's own buffer along `plan`
        (_copy_plan); the moment the copies were done, moved by the answer's time less
        the device's hold for it (anticheat/answer.py)."""
        heard_at, hold = heard
        targets, sources = plan
        if targets and hasattr(torch, "_foreach_copy_"):
            # A kernel, not a copy engine's transfer: a kernel waits for the child's
            # kernels, which a copy engine runs beside (anticheat/answer.py).
            torch._foreach_copy_(targets, sources)
        else:  # a torch before 2.1 (no arena there), or the CPU
            for target, source in zip(targets, sources):
                target.copy_(source)
        answered = time.monotonic() - heard_at
        self.device.synchronize(torch)
        done = time.monotonic()
        return done if hold is None else done + hold.charge(answered)

    def _copy_plan(self, session, offsets):
        """(targets, sources): the byte ranges of this process's copy and of where the
        child's timed call left its outputs (the slot, or `offsets` in the arena and the
        input slots), made once per place (the child's allocator puts a call's outputs
        where it put the last one's, so the answer to a ring is a lookup and one launch,
        whatever the number of outputs); or why `offsets` name no outputs (a str)."""
        if session.plans_layout is not session.output_layout:
            session.copy_plans, session.plans_layout = {}, session.output_layout
        key = None if offsets is None else tuple(offsets)
        plan = session.copy_plans.get(key)
        if plan is not None:
            return plan
        if offsets is not None:
            why = self._arena_misread(session, offsets)
            if why is not None:
                return why
        taken = self._taken(session).raw
        if offsets is None:
            nbytes = session.output_layout.nbytes
            plan = ([taken[:nbytes]], [session.output.raw[:nbytes]]) if nbytes else ([], [])
        else:
            tensors = [leaf for leaf in session.output_layout.leaves if leaf.kind == "tensor"]
            plan = ([], [])
            for leaf, offset in zip(tensors, offsets):
                if leaf.nbytes:
                    region, within = self._region(session, offset)
                    plan[0].append(taken[leaf.offset:leaf.offset + leaf.nbytes])
                    plan[1].append(region.raw[within:within + leaf.nbytes])
        if len(session.copy_plans) >= MAX_COPY_PLANS:  # a child ringing somewhere new each call
            session.copy_plans.clear()
        session.copy_plans[key] = plan
        return plan

    def _answer_ring(self, session):
        """The child rang: its timed call's outputs are copied now, and `take` returns
        when that was done."""
        heard = self._heard()
        session.listening = False
        try:
            offsets = session.doorbell.heard()
            if isinstance(offsets, Table):
                offsets = self._table(session, offsets)
        except Unheard as exc:
            session.ring_unread = str(exc)
            return
        plan = self._copy_plan(session, offsets)
        if isinstance(plan, str):
            session.ring_unread = plan
            return
        try:
            session.rung_at = (self._copy_out(session, heard, plan), "slot" if offsets is None else "arena")
        except Exception as exc:  # noqa: BLE001 - answered by the `take` that follows
            session.ring_failed = exc


    def _table(self, session, table):
        """The offsets a ring's table holds (more than a ring carries): `table.count`
        int64s at `table.offset` (a ring's offset: handover/arena.py's REGION), read
        out of the child's memory; Unheard where they lie nowhere it was lent."""
        region, within = self._region(session, table.offset)
        if region is None or within + 8 * table.count > region.nbytes or within % 8:
            raise Unheard(f"its doorbell named a table of {table.count} offsets at {table.offset}, "
                          "not within what it was lent")
        return region.raw[within:within + 8 * table.count].view(torch.int64).tolist()

    @staticmethod
    def _region(session, offset):
        """(the buffer, the offset in it) a ring's offset names (arena.REGION): the
        arena, or an input slot; (None, offset) where it names none."""
        number, offset = divmod(offset, REGION)
        if number == 0:
            return session.arena, offset
        if number <= len(session.inputs) and session.inputs[number - 1].kind == handover.DEVICE:
            return session.inputs[number - 1], offset
        return None, offset

    @classmethod
    def _arena_misread(cls, session, offsets):
        """Why `offsets` (a ring's) name no outputs in the session's arena or input slots,
        or None."""
        tensors = [leaf for leaf in session.output_layout.leaves if leaf.kind == "tensor"]
        if session.arena is None:
            return "its process rang with offsets in an arena it was never lent"
        if len(offsets) != len(tensors):
            return (f"its process rang with {len(offsets)} offset(s) for "
                    f"{len(tensors)} output(s)")
        for leaf, offset in zip(tensors, offsets):
            region, within = cls._region(session, offset)
            if region is None:
                return f"its process said an output lies in buffer {offset // REGION}, which it was never lent"
            if within + leaf.nbytes > region.nbytes:
                return (f"its process said an output of {leaf.nbytes} bytes lies at {within}, "
                        f"beyond its arena or slot of {region.nbytes}")
        return None

    def _taken(self, session):
        """The buffer of this process's own that a timed call's outputs are copied into."""
        if session.taken is None:
            session.taken = PrivateBuffer(session.output.nbytes, self.device)
        return session.taken

    def _read_outputs(self, session, reading):
        tensors = [leaf for leaf in session.output_layout.leaves if leaf.kind == "tensor"]
        addresses = reading.get("addresses")
        if (not isinstance(addresses, list) or len(addresses) != len(tensors)
                or not all(type(a) is int and 0 <= a < 1 << 64 for a in addresses)):
            return (f"its process reported {addresses!r:.200} as where its "
                    f"{len(tensors)} output(s) lie, not an address for each")
        local = self._taken(session).raw.data_ptr()
        try:
            outputs_read.read_regions(int(reading["pid"]), [
                (local + leaf.offset, address, leaf.nbytes) for leaf, address in zip(tensors, addresses)])
        except outputs_read.ReadFailed as exc:
            return f"its outputs could not be read where its process said they lie ({exc})"
        return None

    def judge(self, request):
        """A trial's verdict: what the child left in the output slot against the
        reference's outputs for the trial's seed."""
        session = self._session(request)
        session.outputs_seen.add(session.sampler.fingerprint(
            handover.views(session.output, session.output_layout, arrays=False)))
        label, report = request["label"], request.get("report") or {}
        record = self._outputs(request["seed"], request.get("transform"), session=session)
        verdict = self._trial_inputs_verdict(session, int(request["slot"]), label)
        if verdict is not None:
            return verdict
        names = None
        if "names" in record["facts"]:  # a kernelbenchx task's test_results, leaf by leaf
            mismatch = kbx.leaf_mismatch(record["facts"], report)
            if mismatch is not None:
                return buffers.fail(mismatch[0], f"{label}: {mismatch[1]}")
            names = kbx.tensor_names(record["facts"])
        outcome = compare.compare_leaves([TensorLeaf(t) for t in record["outputs"]],
                                         self._candidate_leaves(session), request["rule"], names,
                                         self.job.get("workers", 1), facts=self._facts(request["rule"]))
        if not outcome.passed:
            return buffers.fail(outcome.error_class, f"{label}: {outcome.message}", outcome.metrics)
        return {"status": "pass", "metrics": outcome.metrics}

    def after(self, request):
        """A timed call's checks (the module's docstring)."""
        session = self._session(request)
        label = request["label"]
        outputs = handover.views(session.taken, session.output_layout, arrays=False)
        verdict = buffers.completeness_verdict(label, outputs)
        if verdict is not None:
            return verdict
        unit = session.units.get(int(request["slot"])) if self.session.replays_calls else None
        if unit is not None:  # the names and inline values of what the calls returned
            mismatch = kbx.leaf_mismatch(unit.facts(), request.get("report") or {}, kbx_calls.RESULTS_WHAT)
            if mismatch is not None:
                return buffers.fail(mismatch[0], f"{label}: {mismatch[1]}")
        fingerprint = session.sampler.fingerprint(outputs)
        repeated = fingerprint in session.outputs_seen
        session.outputs_seen.add(fingerprint)
        if not request.get("check") and not repeated:
            return {"status": "pass"}
        if unit is not None:
            return self._check_unit(session, unit, request)
        # A checked call: its inputs against the same seed's made again, and the
        # reference's outputs for them, computed now; the child's outputs are copied out
        # chunk by chunk as they are compared.
        inputs = self._make_inputs(request["seed"], None)
        slot = int(request["slot"])
        if session.inputs and session.layouts[slot] is not None:
            layout = session.layouts[slot]
            views = handover.views(session.inputs[slot], layout, arrays=False,
                                   host=session.host_twin(slot))
            verdict = buffers.inputs_verdict(label, buffers.differing(
                views, self._leaves(inputs), self.mutated), True, layout.tree)
            if verdict is not None:
                return verdict
        tensors, _ = self._forward(request["seed"], None, inputs, observed=False)
        return self._spot_check(session, request, [TensorLeaf(t) for t in tensors],
                                self._candidate_leaves(session, taken=True), None)

    def _check_unit(self, session, unit, request):
        """A checked kernelbenchx unit: the reference function over fresh copies of the
        arguments the child was given (after the same seeding); the arguments it leaves
        unchanged must be unchanged in the slot, those it changes in place are compared
        as results, with what the calls returned."""
        label, seed = request["label"], request["seed"]
        (names, tensors, values), changed = self._step(
            f"the task's function on the arguments of {label}",
            lambda: self.session.replay_unit(self.reference, unit, seed))
        if names != unit.names or values != unit.values:
            raise protocol.task_error(
                f"the task's function returned other results on the same arguments ({label}): "
                f"{kbx_calls.RESULTS_WHAT} must not depend on anything but the arguments and the seed")
        slot = int(request["slot"])
        views = handover.views(session.inputs[slot], unit.layout, arrays=False,
                               host=session.host_twin(slot)) if unit.layout.leaves else []
        differing = buffers.differing(views, unit.copies, set(changed))
        if differing:
            return buffers.fail(protocol.CHEAT_DETECTED,
                                f"{label}: the candidate changed {unit.where[differing[0]]} in place "
                                "during a timed call; the reference's same call leaves it unchanged")
        names = kbx.tensor_names(unit.facts()) + [f"{unit.where[k]}, changed in place" for k in changed]
        return self._spot_check(session, request,
                                [TensorLeaf(t) for t in [*tensors, *changed.values()]],
                                self._candidate_leaves(session, taken=True) +
                                [SnapshotLeaf(views[k]) for k in changed],
                                names)

    def _spot_check(self, session, request, reference, candidate, names):
        outcome = compare.compare_leaves(reference, candidate, request["rule"], names,
                                         self.job.get("workers", 1), facts=self._facts(request["rule"]))
        if not outcome.passed:
            return buffers.fail(protocol.CHEAT_DETECTED,
                         f"{request['label']}: spot check failed: {outcome.message} (its trials "
                         "passed: the timed call's output was not computed from that call's inputs)",
                         outcome.metrics)
        return {"status": "pass", "metrics": outcome.metrics}

    def publish(self, request):
        """A timed call's staged inputs into its slot (the module's docstring): the server
        asks once the call's bracket is open, before the child is continued. The output
        slot is poisoned first, unless the outputs are read out of the child ("read"). With
        "flush_l2" on a GPU, the L2 cache is flushed after them (L2_FLUSH_BYTES written):
        the call starts with neither its inputs nor anyone's weights cached. Done here,
        not in the child, so that no loop of a candidate's can leave it out: its time is
        in every call's bracket, the reference's as the candidates'."""
        session = self._session(request)
        slot = int(request["slot"])
        if not request.get("read"):  # the outputs will be copied into the output slot
            buffers.poison(session.output)
            # Rings before this (the child was frozen since its preparation) are not
            # this call's.
            session.doorbell.silence()
            session.listening, session.rung_at, session.ring_failed = True, None, None
        pairs, nbytes = session.staged.pop(slot, ([], 0))
        for target, source in pairs:
            target.copy_(source)
        if nbytes:
            session.inputs[slot].raw[:nbytes].copy_(session.staging.raw[:nbytes])
        flush = bool(request.get("flush_l2")) and self.device.type == "cuda"
        if flush:
            if self.l2_flush is None:
                self.l2_flush = torch.empty(L2_FLUSH_BYTES, dtype=torch.uint8, device=self.device.name)
            self.l2_flush.zero_()
        self.device.synchronize(torch)
        return {"published": True}

    def step(self, request):
        """A timed call's outputs taken (`take`), its checks (`after`) and, when they pass
        and another call follows, the next call's inputs (`fill`): one exchange with the
        server per call. Returns {"taken", "after", "filled", "host_ms"}; without a copy
        of the outputs (`taken` holds no "taken_at") nothing else is done."""
        started = time.perf_counter()
        taken = self.take(request["take"])
        if "taken_at" not in taken:
            return {"taken": taken, "host_ms": (time.perf_counter() - started) * 1e3}
        after = self.after(request["after"])
        filled = self.fill(request["fill"]) if after.get("status") == "pass" and request.get("fill") else None
        return {"taken": taken, "after": after, "filled": filled,
                "host_ms": (time.perf_counter() - started) * 1e3}

    def plan(self, request):
        """What the reference's outputs tell under `rule` (compare.OutputInformation): per
        output leaf its centre over the trials and its rounding noise (the reference again
        at inputs moved by an ulp), kept as the facts every comparison of that leaf is
        judged with; and the varied trials (see VARIATIONS) that give an output without
        information some: {"varied": [[seed, scale, shift], ...]}, empty when the base
        trials' outputs carry information.
        Where no input makes any output vary at the weights of the model seed, the weights
        are drawn again from `model_seeds` (the server's, derived from the run's secret)
        and the reference rebuilt: a task whose output only some weights saturate (a clamp
        after a bias, KernelBench level 2's 58) is judged in every run, at the first draw
        whose output carries information: {"model_seed": that draw's seed} as well. Only
        before any session lent the weights of the first draw, and before another rule
        planned on them. A task_error when no draw gives an output information."""
        rule = request["rule"]
        key = protocol.encode(rule)
        if key in self.plans:
            return {"varied": self.plans[key]}
        if not self.session.inputs_can_vary:
            self.plans[key], self.leaf_facts[key] = [], []
            return {"varied": []}
        redraws = [] if self.plans or self.next_session else list(request.get("model_seeds") or [])
        draws = 1
        while True:
            try:
                planned = self._plan_at_these_weights(request, key)
                break
            except protocol.Verdict as verdict:
                if verdict.error_class != protocol.TASK_ERROR or not redraws or self.uninformed is None:
                    raise
                self._rebuild(redraws.pop(0))
                draws += 1
        if draws > 1:
            planned["model_seed"] = self.options["seed"]
            print(f"kforge: the task's output carries no information at the first "
                  f"{draws - 1} draw(s) of its weights; judged at draw {draws}", file=sys.stderr)
        return planned

    def _plan_at_these_weights(self, request, key):
        rule = request["rule"]
        self.uninformed = None
        information = compare.OutputInformation(rule)
        noise = []

        def observe(seed, transform):
            record = self._outputs(seed, transform)
            moved = self._perturbed_outputs(seed, transform)
            for index, value in enumerate(information.observe(record["outputs"], moved)):
                if index == len(noise):
                    noise.append(0.0)
                noise[index] = max(noise[index], value or 0.0)

        for seed in request["seeds"]:
            observe(seed, None)
        chosen = []
        for seed, transform in zip(request["varied_seeds"], VARIATIONS):
            if information.uninformative() is None:
                break
            try:
                observe(seed, tuple(transform))
            except (TaskFailure, protocol.Verdict) as exc:
                print(f"kforge: inputs x*{transform[0]:g}{transform[1]:+g} do not work for the "
                      f"reference ({exc}); trying the next variation", file=sys.stderr)
                continue
            chosen.append([seed, transform[0], transform[1]])
        why = information.uninformative()
        if why is not None:
            self.uninformed = why
            tried = ", ".join(f"x*{s:g}{b:+g}" for s, b in VARIATIONS)
            draws = 1 + len(request.get("model_seeds") or [])
            raise protocol.task_error(f"{why} (also with inputs scaled and shifted: {tried}, "
                                      f"and at up to {draws} draws of the weights; "
                                      "KernelBench issue #165)")
        self.plans[key] = chosen
        self.leaf_facts[key] = [dict(facts, noise=leaf_noise) if leaf_noise else facts
                                for facts, leaf_noise in zip(information.facts(), noise)]
        return {"varied": chosen}

    def _rebuild(self, model_seed):
        """The reference built again under another model seed: its weights, and every
        output kept from the weights before, go."""
        self.options = dict(self.options, seed=model_seed)
        self.session.options = self.options
        self.kept.clear()
        self.kept_bytes = 0
        self.reference = self._step("building Model(*get_init_inputs())",
                                    lambda: self.session.build(*self.session.reference_class()))
        self._weights()

    def _perturbed_outputs(self, seed, transform):
        """The reference's outputs at the trial's inputs moved by an ulp (compare.perturbed):
        what its rounding alone moves them by."""
        inputs = compare.perturbed(self._make_inputs(seed, transform), seed)
        return self._forward(seed, transform, inputs)[0]

    def _facts(self, rule):
        """Per output leaf, the facts plan() measured under `rule` (none before it ran)."""
        return self.leaf_facts.get(protocol.encode(rule))

    # ---- the loop ----

    def serve(self):
        handlers = {"open": self.open, "close": self.close, "fill": self.fill,
                    "judge": self.judge, "after": self.after, "step": self.step,
                    "publish": self.publish, "take": self.take, "plan": self.plan}
        while True:
            listening = {s.doorbell.read_fd: s for s in self.sessions.values() if s.listening}
            if listening:
                rang = self.channel.wait_for(list(listening))
                for fd in rang:
                    self._answer_ring(listening[fd])
                if rang:
                    continue
            command = self.channel.command()
            if command is None:
                return
            verb = next((name for name in handlers if name in command), None)
            fds = []
            try:
                if verb is None:
                    raise protocol.harness_error(f"an unknown command {sorted(command)}")
                result = handlers[verb](command[verb])
                if verb == "open":
                    result, mappings = result
                    fds = [m.fd for m in mappings]
            except protocol.Verdict as verdict:
                result = protocol.verdict_result(verdict)
            except TaskFailure as failure:
                result = protocol.verdict_result(task_error(self, str(failure), failure.__cause__))
            except Exception as exc:  # noqa: BLE001 - the harness's own failure, answered
                traceback.print_exc()
                sys.stderr.flush()
                if errors.classify(errors.report(exc), None) == protocol.OUT_OF_MEMORY:
                    result = protocol.verdict_result(task_error(self, f"the task host's {verb}", exc))
                else:
                    result = {"status": "error", "error_class": protocol.HARNESS_ERROR,
                              "message": f"the task host failed on {verb}: {type(exc).__name__}: {exc}"}
            self.channel.send({"id": command.get("id"), "result": result,
                               "held_mb": self.peak.held_mb(), "recomputed": self.recomputed},
                              fds=fds)


def main(job, device, channel):
    """The task host's life: the self-test, then sessions until the server is done."""
    host = Host(job, device, channel)
    started = time.monotonic()
    failure = None
    try:
        facts = host.start()
    except protocol.Verdict as verdict:
        failure = protocol.verdict_result(verdict)
    except BaseException as exc:  # noqa: BLE001 - a harness bug must still answer
        traceback.print_exc()
        failure = {"status": "error", "error_class": protocol.HARNESS_ERROR,
                   "message": f"the task host failed: {type(exc).__name__}: {exc}"}
    if failure is not None:
        # Answered outside the except block: its traceback held the task's tensors, and a
        # task that ran out of memory left none for the answer.
        host = None
        gc.collect()
        channel.send({"failed": failure})
        return
    facts["reference_seconds"] = time.monotonic() - started
    channel.send({"ready": facts})
    host.serve()
