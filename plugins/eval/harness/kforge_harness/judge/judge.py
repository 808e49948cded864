"""The judge: a trusted, long-lived child of the server that compares one trial's
candidate outputs with the stored reference outputs and says what it makes of them. It
never runs candidate code: what it reads from the candidate's side is bytes in files
(opened without following links) and a JSON description it validates first.

Commands arrive as JSON lines on its command pipe, one trial each:
  {"id": n, "label": "trial 1", "rule": {...},
   "reference": {"dir", "prefix", "leaves", "mutates_inputs", "aliases_inputs"},
   "candidate": {"dir", "prefix", "report": the child's trial line}}
and each gets one answer line {"id": n, "result": {"status", "error_class", "message",
"metrics"}}; the metrics are compare.TRIAL_METRICS (per-element and
whole-output statistics, all of one pass). A reference leaf's description may carry what
the reference side measured of it ("centre", "noise": compare.compare_leaf's facts). The comparison works in chunks (compare.py),
so the judge's memory stays bounded whatever the outputs' size.

A device judge (server.JudgePool) has an accelerator: it compares large outputs there
(compare.DEVICE_MIN_BYTES), the rest on the CPU like any judge."""

import sys
import traceback

import torch

from kforge_harness.anticheat import anticheat
from kforge_harness.judge import compare
from kforge_harness.tasks import kbx
from kforge_harness import protocol
from kforge_harness.judge.outputs import FileLeaf, torch_dtype

_MAX_LEAVES = 4096


class MalformedReport(Exception):
    """The candidate's process handed over a description the judge cannot use."""


def _candidate_leaves(report, directory, prefix):
    """The candidate's leaves as FileLeaf (or the kind of a non-tensor output, a str)."""
    leaves = report.get("outputs")
    if not isinstance(leaves, list) or len(leaves) > _MAX_LEAVES:
        raise MalformedReport("its outputs are not a list of leaves")
    result = []
    for index, info in enumerate(leaves):
        if not isinstance(info, dict):
            raise MalformedReport(f"output #{index} is not described")
        if info.get("kind") != "tensor":
            kind = info.get("type")
            result.append(kind if isinstance(kind, str) and kind.isidentifier() else "non-tensor")
            continue
        shape = info.get("shape")
        if (not isinstance(info.get("dtype"), str) or torch_dtype(info["dtype"]) is None
                or not isinstance(shape, list) or len(shape) > 64
                or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in shape)):
            raise MalformedReport(f"output #{index} has no valid dtype and shape")
        result.append(FileLeaf(directory, prefix, index, info))
    return result


def _observed(report):
    """The anti-cheat observations of the report, checked for their types."""
    changed = report.get("changed_inputs", [])
    aliased = report.get("aliased")
    if not isinstance(changed, list) or not all(isinstance(i, int) for i in changed):
        raise MalformedReport("its changed_inputs are not a list of positions")
    if aliased is not None and (not isinstance(aliased, list) or len(aliased) != 2
                                or not all(isinstance(i, int) for i in aliased)):
        raise MalformedReport("its aliasing is not a pair of positions")
    return {"changed_inputs": changed, "aliased": aliased}


def judge_trial(command, workers=1, device=None):
    """One trial's result (a dict) from a command (see the module's docstring); `workers`
    threads compare each large output, on `device` (a torch.device) where it is one
    (compare.compare_leaf)."""
    label = command["label"]
    reference, candidate = command["reference"], command["candidate"]
    try:
        observed = _observed(candidate["report"])
        cand_leaves = _candidate_leaves(candidate["report"], candidate["dir"], candidate["prefix"])
    except MalformedReport as exc:
        return _fail(protocol.RUNTIME_ERROR,
                     f"{label}: the candidate's process handed over a malformed report: {exc}")
    cheat = anticheat.verdict(reference, observed, label)
    if cheat is not None:
        return _fail(cheat.error_class, cheat.message)
    names = None
    if "names" in reference:  # a kernelbenchx task's test_results, leaf by named leaf
        mismatch = kbx.leaf_mismatch(reference, candidate["report"])
        if mismatch is not None:
            return _fail(mismatch[0], f"{label}: {mismatch[1]}")
        names = kbx.tensor_names(reference)
    ref_leaves = [FileLeaf(reference["dir"], reference["prefix"], index, info)
                  for index, info in enumerate(reference["leaves"])]
    try:
        outcome = compare.compare_leaves(ref_leaves, cand_leaves, command["rule"], names, workers,
                                         device, facts=reference["leaves"])
    except compare.CandidateOutputError as exc:
        return _fail(protocol.RUNTIME_ERROR,
                     f"{label}: the candidate's process handed over an unreadable output: {exc}")
    metrics = outcome.metrics
    if not outcome.passed:
        return _fail(outcome.error_class, f"{label}: {outcome.message}", metrics)
    return {"status": "pass", "metrics": metrics}


def _fail(error_class, message, metrics=None):
    return {"status": "fail", "error_class": error_class, "message": message,
            "metrics": metrics or {}}


def serve(channel, threads, device=None):
    """The judge's loop: one command in, one answer out, until EOF. Its `threads` each
    compare a slice of an output with one torch thread: torch's own threads gain little
    on the comparison's 64K-element chunks (server.JUDGE_WORKERS has the numbers).
    `device`: a devices.Device whose accelerator compares large outputs (None: the CPU
    compares everything)."""
    torch.set_num_threads(1)
    accelerator = device.activate(torch) if device is not None and device.is_accelerator else None
    # The first comparison loads torch's CPU kernels: paid before any request.
    sample = torch.linspace(-1.0, 1.0, 64)
    compare.compare_outputs([sample], [sample.clone()], protocol.DEFAULT_RULE)
    while True:
        command = channel.command()
        if command is None:
            return
        try:
            result = judge_trial(command, threads, accelerator)
        except Exception as exc:  # noqa: BLE001 - the harness's own failure, not a verdict
            traceback.print_exc()
            sys.stderr.flush()
            result = {"status": "error", "error_class": protocol.HARNESS_ERROR,
                      "message": f"the judge failed on {command.get('label')}: "
                                 f"{type(exc).__name__}: {exc}"}
        channel.send({"id": command["id"], "result": result})
