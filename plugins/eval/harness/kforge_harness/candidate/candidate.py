"""The candidate child: builds ModelNew, runs it on the inputs the task host left in a
buffer, and hands what it returns over to the task host (copied into the output buffer
in trials; in timed calls, read by the task host where it lies where it can be). It holds no reference output,
no seed it was not given for a forward, no comparator and no timing of the reference; it
decides nothing. Everything it says after the marker is data the server checks.

What it sends (protocol.reporter.Channel, JSON lines), all of it data:
- {"harness_flags": [...]} and {"harness_failed": text}: the harness's own setup (the
  device, the task, the buffers), before any candidate code ran (the server trusts these
  only before the marker);
- {"candidate_code": "start"}: the marker; from here on candidate code runs here;
- {"ready": true}: ModelNew is built; {"weights": {"matched", "copied", "not_copied",
  "unused"}}: the reference's weights compared with ModelNew's, copied where they differ;
- {"trial": t, "facts": {...}} or {"trial": t, "mismatch": {"error_class", "message"}}:
  trial t's outputs are in the output buffer (or could not go there);
- {"compiled": true} (compile action);
- a timed loop's {"prepared": true}, per call {"prepared_for": k} and {"called": k, "ms",
  "tail_ms", "harness_ms", "inputs_ms", "mismatch"?, "facts"?} (facts: a kernelbenchx unit's results'
  names and inline values; harness_ms: the harness's own work in the call beside the
  forward);
- {"failed": {"stage", "trial", "types", "text", "where"}}: the candidate's code raised.
Beside them, per timed call whose outputs the task host does not read out of this
process (the CPU's handover/read.py), a ring on the task host's doorbell
(handover/doorbell.py) once they are handed over and the device is idle, before its
{"called": k} report: where they lie in the arena its allocator takes its memory from
(handover/arena.py), or that they were copied into the slot.

Commands: {"job": {...}, "fds": n} first (the buffers' descriptors attached); then
{"build": true} once the server has counted this process's threads; then per trial
{"go": t, "slot", "inputs", "output", "seed"}; per timed loop {"time": {...}} and per call
{"prepare": k, "slot", "inputs", "output", "read"} (no clock runs, the slot does not hold
the call's inputs yet) then {"call": k, "seed", "input_values"?} (inside the server's
bracket; the values made from the seed, which the description sent before leaves out). EOF ends
it. Between those commands the server stops this process (the cgroup freezer, or
SIGSTOP): nothing here runs but what answers them."""

import contextlib
import dataclasses
import json
import os
import sys
import time
import traceback
import types

import numpy as np
import torch

from kforge_harness import handover
from kforge_harness.anticheat import guards
from kforge_harness.handover.arena import Arena, Unavailable as ArenaUnavailable
from kforge_harness.handover.doorbell import MAX_OFFSETS
from kforge_harness.judge.outputs import as_tensor, dtype_name, torch_dtype
from kforge_harness.protocol import errors
from kforge_harness.tasks import tasks
from kforge_harness.tasks.kbx_calls import CannotCross
from kforge_harness.tasks.runner import NoEntry, load_weights, task_session
from kforge_harness.timing.timing import Clock


# What an output may be: plain values (a subclass runs code of its own when read).
_PLAIN = (torch.Tensor, np.ndarray, bool, int, float)


@dataclasses.dataclass(frozen=True)
class _Expected:
    """An output leaf of the reference's layout as the hand-over checks a candidate's
    against it."""
    dtype: str
    shape: torch.Size
    torch_dtype: torch.dtype


class _Failed(Exception):
    """The candidate's code raised in `stage`; the report has been sent."""


class CandidateChild:
    def __init__(self, job, buffers, device, workdir, channel):
        self.job = job
        self.buffers = buffers  # role -> mapping (handover)
        self.device = device
        self.workdir = workdir
        self.channel = channel
        self.options = job["options"]
        self.candidate_path = None
        self._kept = None  # a timed call's outputs and inputs, freed once no clock runs
        self._copy_ns = 0  # a timed call's time spent in the harness's copies (_copy)
        self._prepared_slots = {}  # per input slot: its last timed call's preparation
        self._table = None  # a timed call's outputs' offsets laid in the arena (handover/doorbell.py)
        # The runtime guards' handle once a candidate's code is imported; the task's
        # reference as its own candidate runs unguarded.
        self.guard = types.SimpleNamespace(violations=list,
                                           compute_guard=lambda language: contextlib.nullcontext())
        self.session = task_session(job["task"], self.options, device)

    def run(self):
        try:
            self._harness_setup()
        except BaseException as exc:  # noqa: BLE001 - nothing of the candidate has run yet
            traceback.print_exc()
            self.channel.send({"harness_failed": errors.describe(errors.report(exc))})
            return
        self.channel.send({"candidate_code": "start"})
        if self.channel.command() is None:  # {"build": true}: the server counted threads
            return
        try:
            model = self._build()
            self.channel.send({"ready": True})
            if "weights" in self.buffers:
                loaded = self._guarded("init", lambda: self._load_weights(model))
                self.clock.synchronize()  # the copy is done on the device: the set-up step ends
                self.channel.send({"weights": loaded})
            self._commands(model)
        except _Failed:
            pass
        sys.stdout.flush()
        sys.stderr.flush()

    # ---- the harness's part: nothing of the candidate runs here ----

    def _harness_setup(self):
        if self.job["candidate"]["language"] == "triton":
            import triton  # noqa: F401, PLC0415 - the server checked it is importable
        self.session.setup_device()
        self.session.load()
        self.session.make_init_inputs()
        # torch's CPU thread pool starts at its first parallel operation: before the
        # candidate, so that what it starts is its own.
        torch.ones(1 << 20).add_(1)
        # What the timed loop calls, bound now, before the candidate is imported: a class
        # attribute it rebinds later (Clock.call, Channel.send) is not what runs here.
        self.clock = Clock(self.device)
        self._time_call = self.clock.call
        self._perf = time.perf_counter_ns
        self._send = self.channel.send
        self._command = self.channel.command
        bell = self.buffers.get("doorbell")
        self._ring = bell.ring if bell is not None else (lambda offsets=None, table=None: None)
        self._arena = None
        if "arena" in self.buffers:
            # From here on this thread's device memory is the task host's to read: a timed
            # call's outputs cross without a copy in this process (handover/arena.py).
            slots = [mapping for role, mapping in sorted(self.buffers.items())
                     if role in ("input0", "input1") and mapping.kind == handover.DEVICE]
            arena = Arena(self.buffers["arena"], slots)
            try:
                arena.install()
                self._arena = arena
            except ArenaUnavailable as exc:
                print(f"kforge: {exc}: a timed call's outputs are copied into the slot",
                      file=sys.stderr)

    # ---- the candidate's part ----

    def _guarded(self, stage, call, trial=None):
        try:
            return call()
        except BaseException as exc:  # noqa: BLE001 - candidate code may raise SystemExit
            traceback.print_exc()
            report = errors.report(exc, self.candidate_path)
            refused = self.guard.violations()
            if refused and errors.GUARD_REFUSAL not in report["text"].lower():
                # What the guards refused elsewhere (another thread, a handler) decides:
                # the failure that followed is its consequence.
                report["text"] = f"{report['text']} (after {errors.GUARD_REFUSAL}: {refused[0]})"
            report.update(stage=stage, trial=trial)
            self.channel.send({"failed": report})
            raise _Failed() from None

    def _build(self):
        code = self.job["candidate"]["code"]
        if code is None:  # the task's reference as its own candidate (its timing)
            cls, kind = self.session.reference_class()
        else:
            artifact = self.job["candidate"].get("artifact")
            # Only this request's artifact may stand in for kforge_cpp's own compilation.
            if artifact:
                os.environ["KFORGE_CPP_ARTIFACT"] = artifact
            else:
                os.environ.pop("KFORGE_CPP_ARTIFACT", None)
            code = self.session.candidate_code(code)
            self.candidate_path = os.path.abspath(tasks.write_candidate(code, self.workdir))
            self.guard = guards.install(self.job["candidate"]["language"], self.candidate_path,
                                        self.workdir)
            module = self._guarded("import", lambda: tasks.import_candidate(self.candidate_path))
            try:
                cls, kind = self.session.candidate_entry(module)
            except NoEntry as missing:
                self.channel.send({"failed": {"stage": "init", "types": ["NoEntry"],
                                              "text": str(missing), "where": ""}})
                raise _Failed() from None
        return self._guarded("init", lambda: self.session.build(cls, kind))

    def _load_weights(self, model):
        """The reference's weights (a buffer the task host filled) compared with
        ModelNew's, copied where they differ (runner.load_weights). It runs in this
        process, so a candidate could undo it: what it computes with is then its own
        weights, which the comparison fails."""
        layout = handover.Layout.from_json(self.job["weights"])
        views = handover.views(self.buffers["weights"], layout)
        named = [(leaf.name, view) for leaf, view in zip(layout.leaves, views)]
        matched, copied, not_copied, unused = load_weights(model.model, named)
        if not_copied or unused:
            print(f"kforge: the reference's weights reached {matched} of ModelNew's tensors; "
                  f"ModelNew's {not_copied} got no copy (their shapes match no reference weight "
                  f"left), the reference's {unused} went nowhere", file=sys.stderr)
        return {"matched": matched, "copied": copied, "not_copied": not_copied, "unused": unused}

    def _commands(self, model):
        command = self.channel.command()
        while command is not None:
            if "go" in command:
                report = self._guarded("forward", lambda: self._trial(model, command),
                                       trial=command["go"])
                self.channel.send(report)
                command = self.channel.command()
            elif isinstance(command.get("time"), dict):
                if command["time"].get("compile") and self.job["candidate"]["code"] is None:
                    model = self._guarded("timing", lambda: self.session.compiled(model))
                command = self._timed_loop(model)
            else:
                command = self.channel.command()

    def _inputs(self, command):
        """The inputs of a trial or a timed call: views of the slot the task host filled
        (a kernelbenchx unit's calls over it), or, for a task whose inputs cannot cross by
        buffer (a kernelbenchx trial's test run), made here from the seed."""
        if command.get("inputs") is None:
            return self.session.make_inputs(command["seed"])
        return self._lend(command)(command["seed"], self.clock.copy)

    def _lend(self, command):
        """What takes a call's inputs out of its slot, made before they are there
        (TaskSession.lend_inputs); None where they are made here from the seed."""
        if command.get("inputs") is None:
            return None
        # No slot where nothing crosses in one (a kernelbenchx unit of scalars only).
        slot = command["slot"]
        return self.session.lend_inputs(self.buffers.get(f"input{slot}"), command["inputs"],
                                        self.buffers.get(f"input{slot}_host"))

    def _hand_over(self, out, command, located=None):
        """Copies the outputs into the output buffer, in the reference's layout; returns
        a mismatch ({"error_class", "message"}) when they do not fit it, else None. With
        `located` (a list: a timed call whose outputs the task host reads out of this
        process, handover/read.py, or out of its arena, handover/arena.py) nothing is
        copied: each output's (address, tensor) is appended to it instead."""
        if command.get("output") is None:
            return None
        expected, views = command.get("output_views") or self._output_views(command["output"])
        try:
            leaves = self.session.output_leaves(out)
        except CannotCross as exc:
            # What a kernelbenchx unit's calls returned holds an object of its own: read,
            # it would run its code after the call's clock stopped.
            return {"error_class": "cheat_detected",
                    "message": f"{exc}, not a plain value: an object of its own runs its code "
                               "when it is read, after the timed call; return tensors, numbers, "
                               "strings and lists, tuples and dicts of them"}
        if len(leaves) != len(expected):
            return {"error_class": "shape_mismatch",
                    "message": f"the candidate returns {len(leaves)} output(s), the reference "
                               f"{len(expected)}"}
        names = self.session.tensor_names()
        for index, (value, leaf, view) in enumerate(zip(leaves, expected, views)):
            if type(value) is torch.Tensor and value.dtype is leaf.torch_dtype and value.shape == leaf.shape:
                # The common case, checked in the fewest steps: the harness's work per
                # output leaf is refunded only up to a bound (timing_plan.refunded_gap).
                self._place(value, view, located)
                continue
            name = names[index] if names else f"output #{index}"
            if type(value) not in _PLAIN:
                # A subclass runs its own code when read: it could do its work in the
                # hand-over, after the call's clock stopped.
                return {"error_class": "cheat_detected",
                        "message": f"{name} is a {type(value).__module__}.{type(value).__qualname__}, "
                                   "not a plain tensor: a subclass can defer its work past the "
                                   "timed call; return plain tensors"}
            tensor = as_tensor(value)
            if tensor is None:
                return {"error_class": "dtype_mismatch",
                        "message": f"{name} is a {type(value).__name__}, not a tensor"}
            if tuple(tensor.shape) != tuple(leaf.shape):
                return {"error_class": "shape_mismatch",
                        "message": f"{name} has shape {list(tensor.shape)}, the "
                                   f"reference's {list(leaf.shape)}"}
            if dtype_name(tensor.dtype) != leaf.dtype:
                return {"error_class": "dtype_mismatch",
                        "message": f"{name} has dtype {dtype_name(tensor.dtype)}, the "
                                   f"reference's {leaf.dtype}"}
            self._place(tensor, view, located)
        return None

    def _place(self, tensor, view, located):
        """One output leaf handed over: copied into its view of the slot, or noted for
        the task host's read (`located`)."""
        if located is None:
            self._copy(view, tensor)
        else:
            located.append((tensor.data_ptr(), tensor))

    def _copy(self, target, source):
        """target <- source with the clock's bound copy, its time counted apart from the
        harness's other work in a timed call (`harness_ms`): a copy grows with the bytes,
        not with the leaves."""
        copying = self._perf()
        self.clock.copy(target, source)
        self._copy_ns += self._perf() - copying

    def _output_views(self, described):
        """The output layout's tensor leaves as they are checked and the output buffer's
        views of them."""
        layout = handover.Layout.from_json(described)
        expected = [_Expected(leaf.dtype, torch.Size(leaf.shape), torch_dtype(leaf.dtype))
                    for leaf in layout.leaves if leaf.kind == "tensor"]
        return (expected, [v for v in handover.views(self.buffers["output"], layout) if isinstance(v, torch.Tensor)])

    def _trial(self, model, command):
        inputs = model.feed(self._inputs(command))
        language = self.job["candidate"]["language"] if self.job["candidate"]["code"] else None
        with self.guard.compute_guard(language):
            out = self.session.forward(model, inputs, command["seed"])
        mismatch = self._hand_over(out, command)
        self.clock.synchronize()
        report = {"trial": command["go"], "facts": self.session.output_facts(),
                  "guard": self.guard.violations()}
        if mismatch is not None:
            report["mismatch"] = mismatch
        return report

    def _timed_loop(self, model):
        """One timed loop. Each call comes in two commands. {"prepare": k, ...} comes while
        no clock runs and before the call's inputs are in their slot (its seed is not
        sent yet): the harness's own work around a call is done here (the last call's
        outputs freed, the layouts parsed, the views made). {"call": k, "seed"} comes
        inside the server's bracket: the forward, timed by the clock (bound before the
        candidate was imported), its outputs handed over. What the reference's loop
        spends in the bracket beyond its forward (its gap, refunded to every candidate)
        is then only what any loop must spend there, so a candidate's loop that replaces
        this code gains little by leaving the harness's work out. Returns the first
        command that is neither."""
        self._send({"prepared": True})
        prepared = None
        while True:
            command = self._command()
            self._kept = self._table = None
            if command is None:
                return None
            if "prepare" in command:
                prepared = self._guarded("timing", lambda: self._prepare_call(command))
                self._send({"prepared_for": command["prepare"]})
            elif "call" in command and prepared is not None:
                call, prepared = dict(prepared, **command), None
                self._send(self._timed_call(model, call))
            else:
                return command

    def _prepare_call(self, command):
        """A call's command as the hand-over reads it, its inputs' taker and its outputs'
        views made now (the values made from the call's seed come with the call), or kept
        from the slot's last timed call where the task host's layouts are unchanged.
        Where nothing in the call's arguments needs its seed or its data (tensors that
        reach the slot only inside the bracket, values made in the child laid out whole,
        no number made from the seed), they are put together now too. They are fed
        inside the bracket: a side that takes tensors where the task makes NumPy arrays
        copies them there, and the slot holds the call's data only then."""
        if self._arena is not None:
            self._arena.reclaim()
        slot = command.get("slot")
        if command.get("layouts_unchanged"):
            if slot not in self._prepared_slots:
                raise RuntimeError(f"the timed call's layouts for slot {slot} were never sent")
            prepared = dict(self._prepared_slots[slot], read=command.get("read"))
        else:
            prepared = {key: command.get(key) for key in ("slot", "inputs", "output", "read")}
            prepared["lend"] = self._lend(prepared)
            if prepared["output"] is not None:
                prepared["output_views"] = self._output_views(prepared["output"])
            self._prepared_slots[slot] = prepared
        lend = prepared["lend"]
        if lend is not None and lend.at_prepare:
            prepared = dict(prepared, arguments=lend(None, self._copy))
        elif lend is not None:
            prepared = dict(prepared, made=lend.premake())
        return prepared

    def _timed_call(self, model, call):
        # Outside the call's clock, but the candidate's code may run (a hook of its own):
        # its failure is the candidate's.
        read = self.channel.command_read_ns  # the call's command whole, not yet decoded
        began = self._perf()
        self._copy_ns = 0
        lend, arguments = call["lend"], call.get("arguments")
        inputs = self._guarded("timing", lambda: model.feed(
            arguments if arguments is not None
            else self.session.make_inputs(call["seed"]) if lend is None
            else lend(call["seed"], self._copy, _decoded(call.get("input_values")), call.get("made"))))
        fed = self._perf()
        feeding_copies_ns = self._copy_ns
        out, event_ms, tail_ms, settle_ms = self._guarded(
            "timing", lambda: self._time_call(lambda: model(inputs)))
        timed = self._perf()
        reading = call.get("read")  # by the task host, out of this process (handover/read.py)
        located = [] if reading or self._arena is not None else None
        mismatch = self._guarded("timing", lambda: self._hand_over(out, call, located))
        offsets = table = None
        if located is not None and not reading and mismatch is None:
            offsets = self._arena.offsets([tensor for _, tensor in located])
            if offsets is not None and len(offsets) > MAX_OFFSETS:
                # More than a ring carries: laid in the arena as a table the host reads.
                listed = torch.tensor(offsets, dtype=torch.int64).to(self._arena.device)
                place = self._arena.offsets([listed])
                if place is not None:
                    table = (len(offsets), place[0])
                    self._table = listed  # kept until the host has read it
                offsets = None
            if offsets is None and table is None:
                # Not all where the host reads: copied into the slot, at the candidate's
                # cost (the host copies the slot then, and the verdict says so).
                views = (call.get("output_views") or self._output_views(call["output"]))[1]
                for (_, tensor), view in zip(located, views):
                    self._copy(view, tensor)
        self._guarded("timing", lambda: self.session.release_inputs(inputs, self._copy))
        handed = self._perf()
        self.clock.synchronize()  # the hand-over's copies done: a copy's time, not the harness's
        synced = self._perf()
        if not reading:
            # The outputs are in the slot, or in the arena at `offsets`, and the device is
            # idle: the task host copies them out now (handover/doorbell.py), while the
            # report goes to the server.
            self._ring(offsets, table)
        report = {"called": call["call"], "ms": event_ms, "tail_ms": tail_ms,
                  # Of harness_ms, the call's inputs made here from its seed (all of them,
                  # or values no layout describes whole: handover/tree.py): the server
                  # flags a verdict whose reference made them so (inputs_made_in_call),
                  # charged beyond the refund like the rest of harness_ms. Not what the
                  # call's command carries (a few numbers, a kernelbenchx unit's tape),
                  # nor anything put together in the preparation, nor what lies in the
                  # slot.
                  "inputs_ms": (fed - read - feeding_copies_ns) / 1e6
                  if arguments is None and (lend is None or lend.makes_inputs) else 0.0}
        if reading:
            # Read by the task host once this process is stopped.
            report["outputs_at"] = [address for address, _ in located]
        facts = self.session.output_facts()
        if facts:  # a kernelbenchx unit's results: their names and inline values
            report["facts"] = facts
        if mismatch is not None:
            report["mismatch"] = mismatch
        # Kept until the next command: freed outside the bracket, and alive while the
        # task host reads the outputs out of this process (`located` holds the tensors
        # read, which a hand-over may have made apart from `out`).
        self._kept = (out, inputs, located)
        # Everything this process did in the call's bracket beside the forward and the
        # copies, from the command's line to this report (the command decoded, the inputs
        # fed, the outputs settled, checked and handed over leaf by leaf, the report
        # made), which the server refunds only up to `max_harness_refund_ms`
        # (timing_plan.refunded_gap): believed of the reference's own loop alone. A loop
        # of the candidate's own can leave all of it out (red team 9's lean loop: what
        # the decoding and the report cost, uncounted, was its 1.14x). The copies (the
        # outputs into the slot, a kernelbenchx unit's inputs), which grow with the
        # bytes, stay refunded whole (README, "What it does not protect").
        report["harness_ms"] = (fed - read + handed - timed - self._copy_ns
                                + self._perf() - synced) / 1e6 + settle_ms
        return report


def _decoded(values):
    """A call's values made from its seed (`input_values`), which come as JSON text."""
    return json.loads(values) if isinstance(values, str) else values


def run(job, buffers, device, workdir, channel):
    CandidateChild(job, buffers, device, workdir, channel).run()
