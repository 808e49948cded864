"""The reference store: what the reference worker learned about each task on this
server's device, kept for the whole run in the server's private scratch directory.

An entry is one task at its sizes (its source's hash, format, sizes, size_scale,
fit_memory_mb, inputs_on_device; the device is the server's): the self-test's facts
(the sizes it ran at, its peak memory, the device's memory, flags), the reference's
outputs per (model seed, input seed) and its re-initialised weights as files
(outputs.py), the varied trials chosen for a near-constant reference, and the reference's
timings per timing setup with the time they were measured. Outputs take space, so the store
holds at most `budget_bytes` of them: the least recently used entries lose their outputs
first (their facts stay), entries in use are never touched, and an entry that cannot fit
even alone is transient: its outputs serve the requests in flight and are deleted after
them, so the next candidate recomputes them (the response says so)."""

import hashlib
import json
import os
import shutil
import time


def entry_key(task, source, device_name, inputs_on_device):
    material = json.dumps([hashlib.sha256(source.encode("utf-8")).hexdigest(), task["path"],
                           task["format"], sorted(task["sizes"].items()), float(task["size_scale"]),
                           float(task.get("fit_memory_mb") or 0), device_name,
                           bool(inputs_on_device)])
    return hashlib.sha256(material.encode("utf-8")).hexdigest()


def timing_key(weight_seed, timing_seed, timing):
    return json.dumps([weight_seed, timing_seed, int(timing["warmup"]), int(timing["trials"]),
                       bool(timing["flush_l2"]), timing["baseline"], float(timing["pool_mb"])])


class Entry:
    def __init__(self, key, directory):
        self.key = key
        self.dir = directory
        self.facts = None  # the last self-test's result, less outputs and timing
        self.failure = None  # a task_error that will not change (the task is broken)
        self.outputs = {}  # "model_seed-input_key" -> {leaves, mutates_inputs, aliases_inputs, bytes}
        self.weights = {}  # "model_seed" -> {names, leaves, bytes}: the re-initialised weights
        self.plans = {}  # plan key -> the varied trials [[seed, scale, shift], ...] (may be [])
        self.timings = {}  # timing_key -> timing.summarise's dict, compile_ms?, measured_at
        self.last_used = 0.0
        self.pins = 0
        self.transient = False
        self.worker = None  # the job whose reference worker computes this entry now
        self.waiters = []  # jobs waiting for that worker

    @property
    def bytes(self):
        return (sum(item["bytes"] for item in self.outputs.values())
                + sum(item["bytes"] for item in self.weights.values()))

    def missing(self, model_seed, input_seeds):
        return [s for s in input_seeds if f"{model_seed}-{s}" not in self.outputs]

    def prefixes(self):
        """The file-name prefixes of what the entry holds (outputs and weights)."""
        return list(self.outputs) + [f"w{seed}" for seed in self.weights]

    def stored_timing(self, key, max_age_s):
        """The stored timing for `key` when it is younger than max_age_s, else None."""
        timing = self.timings.get(key)
        if timing is None or time.time() - timing["measured_at"] > max_age_s:
            return None
        return timing


class ReferenceStore:
    def __init__(self, root, budget_bytes):
        self.root = root
        self.budget = budget_bytes
        self.entries = {}
        os.makedirs(root, mode=0o700, exist_ok=True)

    def entry(self, key):
        entry = self.entries.get(key)
        if entry is None:
            entry = Entry(key, os.path.join(self.root, key[:32]))
            os.makedirs(entry.dir, mode=0o700, exist_ok=True)
            self.entries[key] = entry
        entry.last_used = time.monotonic()
        return entry

    def record(self, entry, result, model_seed):
        """Takes a reference worker's successful result into `entry`; returns True when
        the entry's outputs could be kept within the budget (else it is transient)."""
        outputs = result.pop("outputs", {}) or {}
        timing = result.pop("timing", None)
        weights = result.pop("weights", None)
        varied = result.pop("varied", None)
        # A worker that ran none of the task's test code (it computed weights only) saw
        # fewer of the task's modules than an earlier one: the candidates need them all.
        modules = result.get("task_modules") or []
        seen = {module["name"] for module in modules}
        previous = (entry.facts or {}).get("task_modules") or []
        result["task_modules"] = modules + [m for m in previous if m["name"] not in seen]
        entry.facts = result
        for key, item in outputs.items():
            entry.outputs[f"{model_seed}-{key}"] = item
        if weights is not None:
            entry.weights[str(model_seed)] = weights
        if varied is not None:
            entry.plans[result["plan_key"]] = varied
        if timing is not None:
            entry.timings[result["timing_key"]] = timing
        entry.last_used = time.monotonic()
        return self._fit(entry)

    def _fit(self, newest):
        total = sum(e.bytes for e in self.entries.values())
        for victim in sorted(self.entries.values(), key=lambda e: e.last_used):
            if total <= self.budget:
                break
            if victim is newest or victim.pins or not victim.outputs:
                continue
            total -= victim.bytes
            self.drop_outputs(victim)
        newest.transient = total > self.budget
        return not newest.transient

    def drop_outputs(self, entry):
        """Deletes the entry's output and weight files, and the plans of varied trials
        whose outputs they were (its facts and timings stay)."""
        entry.outputs, entry.weights, entry.plans = {}, {}, {}
        self.discard_unrecorded(entry)

    @staticmethod
    def discard_unrecorded(entry):
        """Deletes files of the entry no recorded output owns (a failed worker's)."""
        owned = tuple(f"{prefix}-" for prefix in entry.prefixes())
        for name in os.listdir(entry.dir):
            if not (owned and name.startswith(owned)):
                os.unlink(os.path.join(entry.dir, name))

    def pin(self, entry):
        entry.pins += 1

    def unpin(self, entry):
        entry.pins -= 1
        if entry.pins == 0 and entry.transient:
            self.drop_outputs(entry)
            entry.transient = False

    def close(self):
        shutil.rmtree(self.root, ignore_errors=True)
