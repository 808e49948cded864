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
- {"compiled": true} (compile action), {"timing": {"ms": .., "p90": ..}};
- {"failed": {"stage": "import" | "init" | "forward" | "timing", "trial": i, "types": [..],
  "text": .., "where": ..}}: the candidate's code raised (errors.report).

It runs trial i only after the server's command {"go": i} (the server commands trials
ahead only while their outputs fit its window, so outputs waiting on disk for the judge
stay bounded), and times itself after {"time": true}; EOF on the command pipe ends it."""

import os
import sys
import traceback

import torch

from . import anticheat, errors, tasks
from .outputs import FileLeaf, write_leaves
from .runner import TaskSession, load_weights
from .timing import Timer


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
        self.session = TaskSession(job["task"], self.options, device)

    def run(self):
        try:
            self._harness_setup()
        except BaseException as exc:  # noqa: BLE001 - nothing of the candidate has run yet
            traceback.print_exc()
            self.channel.send({"harness_failed": errors.describe(errors.report(exc))})
            return
        self.channel.send({"candidate_code": "start"})
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
            self.candidate_path = os.path.abspath(tasks.write_candidate(code, self.workdir))
            module = self._guarded("import", lambda: tasks.import_candidate(self.candidate_path))
            cls, kind = getattr(module, "ModelNew", None), "torch"
            if cls is None:
                self.channel.send({"failed": {"stage": "init", "types": ["NoModelNew"],
                                              "text": "the candidate defines no ModelNew class",
                                              "where": ""}})
                raise _Failed()
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
        if (self.channel.command() or {}).get("time"):
            self._time(model)

    def _trial(self, model, index, seed, transform=None):
        inputs = model.feed(self.session.make_inputs(seed, transform))
        # What an uninitialised output would read: poison, not an earlier trial's values.
        anticheat.poison_allocator(self.job["poison_bytes"], self.session.torch_device)
        out, changed, aliased = self.session.observe(model, inputs, seed)
        leaves = write_leaves(out, self.workdir, f"out-{index}")
        return {"trial": index, "outputs": leaves, "changed_inputs": changed, "aliased": aliased}

    def _time(self, model):
        timing = self.job["timing"]
        timer = Timer(torch, self.device, int(timing["warmup"]), int(timing["trials"]),
                      bool(timing["flush_l2"]))
        seed = self.job["timing_seed"]
        inputs = model.feed(self._guarded("timing", lambda: self.session.make_inputs(seed)))
        ms, p90 = self._guarded("timing", lambda: timer.measure(lambda: model(inputs)))
        self.channel.send({"timing": {"ms": ms, "p90": p90}})


def run(job, device, workdir, channel):
    CandidateChild(job, device, workdir, channel).run()
