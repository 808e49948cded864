"""The server's task hosts (reference/host.py): one per task (its source, sizes, format
and the device) while candidates of that task run, kept a while after for the next ones,
the least recently used closed first.

A TaskEntry is what the server knows of a task: its host process, the self-test's facts
(or the failure that will not change), the reference's timing records, the varied trials
of near-constant outputs per rule, and the host commands in flight with what to do with
each answer."""

import hashlib
import json
import math
import time


def entry_key(task, source, device_name, inputs_on_device, model_seed):
    """What makes a task's reference different: its source, how it is sized, its format,
    where its inputs are made, the device, and its weights (the first draw's model seed:
    requests under another secret get a host of their own)."""
    spec = {"source_sha": hashlib.sha256(source.encode("utf-8")).hexdigest(),
            "sizes": task["sizes"], "size_scale": task["size_scale"],
            "fit_memory_mb": task["fit_memory_mb"], "format": task["format"],
            "inputs_on_device": inputs_on_device, "device": device_name, "model_seed": model_seed}
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()


def timing_key(timing, model_seed):
    """What a reference's timing depends on besides the task: the model seed (its weights)
    and the loop's shape."""
    return json.dumps([model_seed, int(timing["warmup"]), int(timing["trials"]),
                       bool(timing["flush_l2"]), timing["baseline"]])


class TaskEntry:
    def __init__(self, key):
        self.key = key
        self.proc = None  # the task host, once started
        self.facts = None  # its self-test's facts, once ready
        self.failure = None  # a task_error that will not change (the task is broken)
        self.starter = None  # the job that started the host (it paid the self-test)
        self.host_asked = False  # its start waits for the device (server/turns.py)
        self.waiting = []  # jobs waiting for the host to be ready
        self.pending = {}  # command id -> (job, callback, wants_fds, a step of the job's turns)
        self.sent_at = {}  # command id -> when it was sent
        self.next_id = 0
        self.timings = {}  # timing_key -> timing_plan.Loop.record() (+ compile_ms)
        self.timing_job = {}  # timing_key -> the internal job measuring it
        self.timing_waiters = {}  # timing_key -> jobs waiting for it
        self.plans = {}  # rule (encoded) -> varied trials
        self.model_seed = None  # the weights' draw the host's plan chose over the first
        self.users = 0  # jobs holding it
        self.last_used = time.monotonic()
        self.held_mb = 0.0  # the device memory the host last reported holding
        self.recomputed = 0

    @property
    def ready(self):
        return self.facts is not None and self.proc is not None

    def stored_timing(self, key, max_age_s):
        record = self.timings.get(key)
        if record is None or time.time() - record["measured_at"] > max_age_s:
            return None
        return record


class Hosts:
    """The entries by key, and which idle hosts to close."""

    def __init__(self, keep_idle, idle_mb=math.inf):
        self.entries = {}
        self.keep_idle = keep_idle
        # The device memory idle hosts may hold between them (their kept reference
        # outputs): a host keeps its first output whatever its size, and idle hosts each
        # holding a 6.4 GB output once left the jobs admitted beside them out of memory.
        self.idle_mb = idle_mb

    def entry(self, key):
        entry = self.entries.get(key)
        if entry is None:
            entry = self.entries[key] = TaskEntry(key)
        entry.last_used = time.monotonic()
        return entry

    def idle_to_close(self):
        """Hosts no job holds beyond the `keep_idle` most recently used, and those that do
        not fit `idle_mb` of device memory beside the more recently used ones."""
        idle = sorted((e for e in self.entries.values()
                       if e.proc is not None and e.users == 0 and not e.pending),
                      key=lambda e: e.last_used, reverse=True)
        close, held = idle[self.keep_idle:], 0.0
        for entry in idle[:self.keep_idle]:
            if held + entry.held_mb > self.idle_mb:
                close.append(entry)
            else:
                held += entry.held_mb
        return close

    def by_proc(self, proc):
        return next((e for e in self.entries.values() if e.proc is proc), None)
