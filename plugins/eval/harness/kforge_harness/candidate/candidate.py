"""The candidate child: builds ModelNew, makes each trial's inputs from the seeds it is
given, runs forward, and hands over what it saw. It holds no reference output and no
comparator; it decides nothing.

What it sends (Channel, JSON lines), all of it data:
- {"harness_failed": text}: setting up the device or loading the task failed, before
  any candidate code ran (the server trusts this only before the marker below);
- {"candidate_code": "start"}: the marker; from here on candidate code runs here, and
  the server believes nothing this process says about who is to blame;
- {"ready": true}: ModelNew is built;
- {"weights": {"copied": n, "not_copied": [..], "unused": [..]}}: the reference's
  re-initialised weights (files in its directory) loaded into ModelNew
  (runner.load_weights);
- {"trial": i, "outputs": [...], "changed_inputs": [...], "aliased": [o, i] | null}: trial
  i's outputs are in this child's directory (outputs.write_leaves, prefix "out-i");
- {"compiled": true} (compile action);
- the timed loop's lines {"prepared": k, "outputs": [...] | null} and {"called": k, "ms",
  "synced_ms", "tail_ms", "types"} (timing_plan.py has the exchange);
- {"failed": {"stage": "import" | "init" | "forward" | "timing", "trial": i, "types": [..],
  "text": .., "where": ..}}: the candidate's code raised (errors.report).

After the marker it waits for {"build": true} (the server counts this process tree's
threads first: the baseline of the thread guard). It runs trial i only after the
server's command {"go": i} (the server commands trials ahead only while their outputs
fit its window, so outputs waiting on disk for the judge stay bounded), and runs a timed
loop on each {"time": plan}, one call per {"call": k}; EOF on the command pipe ends it."""

import os
import sys
import traceback

import torch

from kforge_harness.anticheat import anticheat
from kforge_harness.protocol import errors
from kforge_harness.tasks import tasks
from kforge_harness.judge.outputs import FileLeaf, flat_leaves, write_leaves
from kforge_harness.tasks.runner import NoEntry, load_weights, task_session
from kforge_harness.timing.timing import Clock, InputPool


class _Failed(Exception):
    """The candidate's code raised in `stage`; the report has been sent."""


class CandidateChild:
    def __init__(self, job, device, workdir, channel):
        self.job = job
        self.device = device
        self.workdir = workdir
        self.channel = channel
        self.options = job["options"]
        self.candidate_path = None
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
            if self.job.get("weights"):
                self.channel.send({"weights": self._guarded("init", lambda: self._load_weights(model))})
            if self.job["action"] == "compile":
                self._compile(model)
            else:
                self._trials(model)
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
        # torch's CPU thread pool starts at its first parallel operation: started here,
        # before the server's thread count, so an honest forward adds no thread.
        torch.ones(1 << 20).add_(1)

    # ---- the candidate's part ----

    def _guarded(self, stage, call, trial=None):
        try:
            return call()
        except BaseException as exc:  # noqa: BLE001 - candidate code may raise SystemExit
            traceback.print_exc()
            report = errors.report(exc, self.candidate_path)
            report.update(stage=stage, trial=trial)
            self.channel.send({"failed": report})
            raise _Failed() from None

    def _build(self):
        code = self.job["candidate"]["code"]
        if code is None:  # the task's reference as its own candidate
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
            module = self._guarded("import", lambda: tasks.import_candidate(self.candidate_path))
            try:
                cls, kind = self.session.candidate_entry(module)
            except NoEntry as missing:
                self.channel.send({"failed": {"stage": "init", "types": ["NoEntry"],
                                              "text": str(missing), "where": ""}})
                raise _Failed() from None
        return self._guarded("init", lambda: self.session.build(cls, kind))

    def _compile(self, model):
        """Triton compiles a kernel at its first launch: one forward compiles them all."""
        if self.job["candidate"]["language"] == "triton":
            seed = self.job["input_seeds"][0]
            self._guarded("forward", lambda: self.session.forward(
                model, model.feed(self.session.make_inputs(seed)), seed), trial=0)
        self.channel.send({"compiled": True})

    def _load_weights(self, model):
        """The harness's step after ModelNew's constructor: the reference's weights
        into ModelNew. (Runs in this process, so a candidate could undo it; what it
        computes with is then its own default weights, which the comparison fails.)"""
        weights = self.job["weights"]
        leaves = [(name, FileLeaf(self.workdir, weights["prefix"], index, info))
                  for index, (name, info) in enumerate(zip(weights["names"], weights["leaves"]))]
        copied, not_copied, unused = load_weights(model.model, leaves)
        if not_copied or unused:
            print(f"kforge: the reference's weights reached {copied} of ModelNew's tensors; "
                  f"ModelNew's {not_copied} got no copy (their shapes match no reference weight "
                  f"left), the reference's {unused} went nowhere", file=sys.stderr)
        return {"copied": copied, "not_copied": not_copied, "unused": unused}

    def _trials(self, model):
        transforms = self.job.get("input_transforms") or [None] * len(self.job["input_seeds"])
        for index, (seed, transform) in enumerate(zip(self.job["input_seeds"], transforms)):
            if self.channel.command() is None:
                return
            report = self._guarded("forward", lambda: self._trial(model, index, seed, transform),
                                   trial=index)
            self.channel.send(report)
        while True:
            command = self.channel.command()
            if command is None or not isinstance(command.get("time"), dict):
                return
            self._timed_loop(model, command["time"])

    def _trial(self, model, index, seed, transform=None):
        inputs = model.feed(self.session.make_inputs(seed, transform))
        # What an uninitialised output would read: poison, not an earlier trial's values.
        anticheat.poison_allocator(self.job["poison_bytes"], self.session.torch_device)
        out, changed, aliased = self.session.observe(model, inputs, seed)
        leaves = write_leaves(out, self.workdir, f"out-{index}")
        return {"trial": index, "outputs": leaves, "changed_inputs": changed, "aliased": aliased,
                **self.session.output_facts()}

    def _timed_loop(self, model, plan):
        """One timed loop (timing_plan.py): a pool of input sets made before it, one call
        per command, each call's outputs checked for their exact type, handed over when
        the server asks after the call, the pool slot refilled with the next seed."""
        clock = Clock(torch, self.device, bool(plan["flush_l2"]))
        pool = self._guarded("timing", lambda: InputPool(
            lambda seed: model.feed(self.session.make_inputs(seed)), plan["pool"]))
        clock.idle()
        self.channel.send({"prepared": -1, "bare_gap_ms": clock.bare_gap()})
        out = None
        for _ in range(3 * int(plan["calls"])):
            command = self.channel.command()
            if command is None:
                return
            if "ping" in command:
                self.channel.send({"pong": command["ping"]})
            elif "call" in command:
                inputs = pool.inputs(command["call"])
                out, event_ms, synced_ms, tail_ms = self._guarded(
                    "timing", lambda: clock.call(lambda: model(inputs)))
                types = [f"{type(v).__module__}.{type(v).__qualname__}" for v in flat_leaves(out)]
                self.channel.send({"called": command["call"], "ms": event_ms,
                                   "synced_ms": synced_ms, "tail_ms": tail_ms, "types": types})
            else:
                call = command["after"]
                handed = None
                if command.get("hand"):
                    handed = self._guarded("timing", lambda: write_leaves(
                        out, self.workdir, f"spot-{call}"))
                out = inputs = None  # the refill below frees this call's set first
                if command.get("refill") is not None:
                    self._guarded("timing", lambda: pool.refill(call, command["refill"]))
                clock.idle()
                self.channel.send({"prepared": call, "outputs": handed,
                                   "bare_gap_ms": clock.bare_gap()})


def run(job, device, workdir, channel):
    CandidateChild(job, device, workdir, channel).run()
