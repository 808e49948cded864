"""The server: reads requests (JSON lines on stdin), runs them through its children,
writes responses (JSON lines on stdout) in completion order. PROTOCOL.md is the contract;
README.md ("Architecture", "Threat model") explains the parties.

The server is trusted and never touches the device (a CUDA context does not survive
fork). Its children:
- the zygote (sandbox/zygote.py): forked first, before any request is read; every
  candidate child is forked from it, so no candidate inherits a request, a seed, a timing
  or another candidate's code;
- the task hosts (reference/host.py, trusted): one per task, holding its reference on the
  device; they fill the inputs of every trial and timed call into buffers they lend
  (handover), and judge the outputs a child leaves there;
- the candidate children (candidate/candidate.py, untrusted, sandboxed): run ModelNew on
  the lent inputs, copy its outputs into the lent output buffer, time themselves; the
  reference's own timing runs in such a child too (internal jobs), so the same code times
  both;
- the checker (server/child.check_main): the L1 static check, which parses and never runs
  code.

Who is blamed is decided here, from what the server itself saw: a task host that fails
is the task's (task_error); a candidate child that fails before it reports the marker
{"candidate_code": "start"} is the harness's; after it, everything that goes wrong in
that child is the candidate's, whatever the child says.

One thread, one select loop over stdin, the children's channels and a self-pipe that
SIGCHLD writes to; wall-clock deadlines and the device-memory watch are the select's
timeouts."""

import glob
import json
import math
import os
import selectors
import shutil
import signal
import sys
import tempfile
import time
import traceback

from kforge_harness import protocol, sandbox
from kforge_harness.anticheat import memory, timing as anticheat_timing
from kforge_harness import HARNESS_DIR
from kforge_harness.devices import memory_watch, toolchain
from kforge_harness.handover import read as outputs_read
from kforge_harness.judge import compare
from kforge_harness.protocol import errors, reporter
from kforge_harness.reference.reference import VARIATIONS, WEIGHT_DRAWS
from kforge_harness.sandbox.zygote import Zygote
from kforge_harness.server import child, freezer
from kforge_harness.server.hosts import Hosts, entry_key, timing_key
from kforge_harness.server.procs import (Proc, continue_tree, death_text, death_verdict, descendants,
                                         cpu_used, error, fail, freeze_tree, kill_group, log_tail,
                                         sandbox_worker, set_nonblocking, signal_tree, still_frozen)
from kforge_harness.server.seeds import RequestSeeds
from kforge_harness.server.trace import Trace
from kforge_harness.server.turns import DeviceTurns
from kforge_harness.tasks.tasks import read_task_source
from kforge_harness.timing import timing_plan
from kforge_harness.timing.timing import summarise

# A child's line longer than this is a flood, not a report.
MAX_LINE_BYTES = 8 << 20
# What a candidate's child may write to its pipe: a line per command the server sent it
# and a few more (the marker, ready, flags...), 64 MB in all. Past either it is a flood,
# however it is cut into lines: every line costs the server's loop a decode, and that
# loop serves every other request too.
CANDIDATE_LINES_BEYOND_COMMANDS = 32
MAX_CANDIDATE_BYTES = 64 << 20
# Threads a task host compares one large CPU output with, each on a slice.
JUDGE_WORKERS = 4
# The file a server holds locked for its life in its private directory: a directory whose
# lock can be taken belongs to a server that is gone (killed before it could clean up).
LOCK_FILE = "server.lock"
SANDBOX_VIEW_FILE = "sandbox-view.json"  # spawn mode: sandbox_fs.save_view() of the server
SPEEDUP_FLAG_LIMIT = 10.0
# How often the device memory of the candidates' processes is read (accelerators).
MEMORY_WATCH_S = 0.2
# The arena a child allocates from (handover/arena.py): twice the task's peak and 1 GiB,
# so that a candidate holding more than the reference (a CUDA graph's pool, buffers of
# its own) still has its outputs there. An output beyond it is copied, at its cost.
ARENA_OVER_PEAK = 2
ARENA_SLACK_MB = 1024


class Job:
    def __init__(self, request, internal=None):
        self.request = request
        self.id = request["id"]
        self.action = request["action"]
        # An internal job: the reference's own timing for (entry, timing key); not
        # answered on stdout.
        self.internal = internal
        self.started = time.monotonic()
        self.finished = False
        self.proc = None
        self.flags = []
        self.entry = None
        self.source = None
        self.session = None  # the task host's session number
        self.buffers = None  # its buffers' descriptions
        self.weights = None  # the weights' layout
        # The input slots whose timed call's layouts the child was sent: the task host
        # sends them again only when they change (host.py's `fill`).
        self.layouts_sent = set()
        self.host_seconds = 0.0  # time the job waited for its host's answers
        self.marker = False
        self.harness_failed = None
        self.ready = False
        self.weights_loaded = False
        self.decided = None
        self.trials = []  # (input seed, transform or None)
        self.next_trial = 0
        self.trial_sent = False  # a trial's `go` sent, its report not yet read: one report per go
        self.trial_metrics = []
        self.loop = None
        self.first_loop = None  # (loop, summary, reference) once a confirmation follows it
        self.next_loop = "timing"  # the loop that starts once the reference is timed
        self.record = None  # an internal job's reference timing record
        self.reference = None  # the reference timing record this job's loops are judged by
        self.asked_again = False
        self.timed_by_clock = None  # why its events were not trusted, measured again
        self.frozen = None  # the child's processes, stopped between timed calls (freeze_tree)
        self.frozen_used = ()  # what they had run when they were seen stopped (cpu_used)
        # Stopped by signals for another job's loop: the processes seen stopped, and what
        # they had run then (still_frozen looks again when the loop ends).
        self.paused_frozen = None
        self.paused_used = ()
        self.freezing = None  # while they are being frozen: (what follows, deadline)
        self.cgroup = None  # or, where the machine gives one, the cgroup that freezes them
        self.paid_reference = False  # it ran the reference's timing or recomputed outputs
        self.reference_wait_from = None  # since when, frozen, it waits for the reference's timing
        self.timing_started = 0.0
        self.had_company = False
        self.turn_wait_s = 0.0  # time its steps and loops waited for other jobs' timing loops
        self.arena_mb = 0.0  # the device memory its task host lends its child (handover/arena.py)
        # Its child's wall-clock limit is suspended while it waits for other jobs' loops
        # (held, paused, or asking for its own turn): how many such waits, and the time
        # that was left when the first began.
        self.limit_holds = 0
        self.limit_left = 0.0
        task = request.get("task") or {}
        self.seeds = RequestSeeds(request["options"]["seed"], task.get("id") or os.path.splitext(
            os.path.basename(task.get("path") or ""))[0])

    def timing(self):
        timing = self.request["options"]["timing"]
        if self.internal is not None:
            return timing
        return timing if self.action == "run" and timing["enabled"] else None

    @property
    def model_seed(self):
        """The seed both models are built under: the first draw's, or the draw the task
        host's plan chose where the first gave no output information (TaskEntry)."""
        chosen = self.entry.model_seed if self.entry is not None else None
        return self.seeds.model if chosen is None else chosen

    def timing_key(self):
        return timing_key(self.request["options"]["timing"], self.model_seed)

    def language(self):
        return self.request["candidate"]["language"]


class Server:
    def __init__(self, device, mode, max_children, scratch, store_bytes, freezer):
        self.device = device
        self.freezer = freezer  # freezes candidates between timed calls (or None: signals)
        # Measured after every import, so that limits.memory_mb is on top of them.
        from kforge_harness.sandbox import isolation
        self.memory_base = isolation.memory_baseline(device)
        self.mode = mode
        self.max_children = max(1, max_children)
        _remove_abandoned(scratch or tempfile.gettempdir())
        self.root = tempfile.mkdtemp(prefix="kforge-harness-", dir=scratch)
        self.lock_fd = os.open(os.path.join(self.root, LOCK_FILE), os.O_CREAT | os.O_RDONLY | os.O_CLOEXEC, 0o600)
        import fcntl
        fcntl.flock(self.lock_fd, fcntl.LOCK_EX)
        self.work_root = os.path.join(self.root, "work")
        os.makedirs(self.work_root, mode=0o700)
        if mode == "spawn":  # what each spawned child's sandbox shows (_exec_candidate)
            sandbox.save_view(os.path.join(self.root, SANDBOX_VIEW_FILE))
        self.keep_bytes = store_bytes // self.max_children
        self.hosts = Hosts(keep_idle=self.max_children,
                           idle_mb=store_bytes / (1 << 20) if self.device.is_accelerator else math.inf)
        self.queue = []
        self.jobs = set()  # jobs holding a slot
        self.freezing = set()  # jobs (internal ones too) whose child is being frozen
        self.procs = {}  # pid -> Proc
        self.standby = None  # fork mode: a candidate child waiting for its job
        self.next_internal = 0
        # Timing loops have the device alone, the rest shares it (turns.py); the jobs
        # paused meanwhile.
        self.turns = DeviceTurns(self._pause_neighbours, self._resume_neighbours)
        self.trace = Trace()
        self.paused = []
        self.pausing = None  # (the loop's start, deadline) until the paused are seen stopped
        self.stdin_open = True
        self.stdin_buffer = bytearray()
        # poll, not epoll: epoll refuses a regular file as stdin (requests from a file).
        self.selector = selectors.PollSelector()
        self.wake_r = self.wake_w = None
        _cap_malloc_arenas()
        # Forked after every import and before any request: what it holds is what every
        # candidate child holds (sandbox/zygote.py). Before NVML is opened here: a child
        # must open its own (torch's allocator asks NVML when memory runs out).
        self.zygote = Zygote(self._zygote_child) if mode == "fork" else None
        self.memory_watch = memory_watch.open_watch(device)
        self.next_watch = 0.0
        # Why a timed call's outputs cannot be read out of the child by the task host
        # (handover/read.py), or None: then the child copies nothing in a timed call.
        self.outputs_unread = ("its outputs are on the device" if device.is_accelerator
                               else outputs_read.available())

    def _zygote_child(self, request, fds):
        """What a child forked from the zygote runs (in the child)."""
        child.candidate_main(fds["command"], fds["result"], self.device, request["workdir"],
                             self.memory_base, request["hidden"], request["network"])

    # ---- main loop ----

    def serve(self):
        self.wake_r, self.wake_w = os.pipe()
        set_nonblocking(self.wake_r)
        set_nonblocking(self.wake_w)
        signal.set_wakeup_fd(self.wake_w, warn_on_full_buffer=False)
        # A Python-level handler is what makes SIGCHLD reach the wakeup fd.
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
        self.selector.register(0, selectors.EVENT_READ, "stdin")
        self.selector.register(self.wake_r, selectors.EVENT_READ, "wake")
        self._refill_standby()
        try:
            while True:
                while self.queue and len(self.jobs) < self.max_children:
                    self._start(self.queue.pop(0))
                if not self.stdin_open and not self.jobs and not self.queue:
                    return 0
                for key, _ in self.selector.select(self._select_timeout()):
                    if key.data == "stdin":
                        self._read_stdin()
                    elif key.data == "wake":
                        self._drain(self.wake_r)
                    else:
                        self._read(key.data)
                self._reap()
                self._enforce_deadlines()
                self._watch_memory()
                for job in list(self.freezing):
                    self._advance_freeze(job)
                if self.pausing is not None:
                    self._advance_pause()
        finally:
            for proc in list(self.procs.values()):
                self._continue(proc)
                kill_group(proc.pid)
                os.waitpid(proc.pid, 0)
            if self.zygote is not None:
                self.zygote.close()
            if self.freezer is not None:
                self.freezer.close()
            shutil.rmtree(self.root, ignore_errors=True)

    def _select_timeout(self):
        # A killed child's SIGCHLD wakes the loop: only live deadlines bound the wait.
        deadlines = [p.deadline for p in self.procs.values() if not p.timed_out]
        if self.memory_watch is not None and any(j.proc is not None and j.marker for j in self.jobs):
            deadlines.append(self.next_watch)
        if self.freezing or self.pausing is not None:
            return 0.0  # each freeze is looked at once per pass (_advance_freeze, _advance_pause)
        if not deadlines or min(deadlines) == math.inf:
            return None
        return max(0.0, min(deadlines) - time.monotonic())

    @staticmethod
    def _drain(fd):
        try:
            while os.read(fd, 4096):
                pass
        except BlockingIOError:
            pass

    # ---- requests and responses ----

    def _read_stdin(self):
        data = os.read(0, 1 << 16)
        if not data:
            self.stdin_open = False
            self.selector.unregister(0)
            data = b"\n"
            if self.standby is not None:  # no request will come for it
                self.standby.close_commands()
                self.standby = None
        self.stdin_buffer += data
        *lines, rest = self.stdin_buffer.split(b"\n")
        self.stdin_buffer = bytearray(rest)
        for line in lines:
            if line.strip():
                self._accept(line)

    def _accept(self, line):
        request_id = None
        try:
            raw = json.loads(line)
            request_id = raw.get("id") if isinstance(raw, dict) else None
            self.queue.append(Job(protocol.normalise_request(raw)))
        except ValueError as exc:  # json.JSONDecodeError is a ValueError
            self._respond(protocol.response(request_id, "error", protocol.HARNESS_ERROR,
                                            f"bad request: {exc}"))

    def _respond(self, response):
        sys.stdout.write(protocol.encode(response))
        sys.stdout.flush()

    def _finish(self, job, result):
        """Answers `job` with `result` (a verdict dict), frees its slot, its session and
        its candidate child."""
        if job.finished:
            return
        self.trace(job, "finish", status=result.get("status"))
        job.finished = True
        self.jobs.discard(job)
        self.turns.forget(job)
        if job.proc is not None and job.proc.pid in self.procs:
            self._continue(job.proc)
            kill_group(job.proc.pid)
        entry = job.entry
        closing = host = None
        if entry is not None:
            if job.session is not None and entry.proc is not None:
                host = entry.proc
                # Answered like any command, so under the host's deadline: a host that
                # hangs is killed, and its death sends what it held.
                closing = self._host_send(entry, job, {"close": {"session": job.session}},
                                          lambda _job, _result: None)
            entry.users -= 1
            entry.last_used = time.monotonic()
            self._close_idle_hosts()
        if job.internal is not None:
            self._reference_timed(job, result)
            return
        log = log_tail(os.path.join(job.proc.workdir, "log.txt")) if job.proc is not None else ""
        metrics = dict(result.get("metrics") or {})
        metrics["child_seconds"] = time.monotonic() - job.started
        metrics["turn_wait_seconds"] = job.turn_wait_s
        flags = list(job.flags) + [f for f in result.get("flags") or [] if f not in job.flags]
        task_sizes = None
        if entry is not None and entry.facts is not None:
            facts = entry.facts
            metrics.update(task_peak_mb=self._need_mb(entry),
                           device_memory_mb=facts["device_memory_mb"] - self._hosts_mb(entry))
            task_sizes = facts["task_sizes"]
            flags += [f for f in facts.get("flags", []) if f not in flags]
            if self.device.is_accelerator and facts.get("handover") == "host":
                flags.append("handover_host")
        if job.action in ("run", "compile") and entry is not None:
            # Device work this request paid for the reference: the task host's self-test,
            # the reference's timing, outputs recomputed beyond the budget. k candidates
            # of a task cost the sum of these plus k.
            started = entry.starter is job
            metrics["reference_computed"] = 1 if started or job.paid_reference else 0
            if started and entry.facts is not None:
                metrics["reference_seconds"] = entry.facts.get("reference_seconds", 0.0)
            elif not started:
                flags.append("reference_from_store")
        response = protocol.response(
            job.id, result.get("status", "error"), result.get("error_class", ""),
            result.get("message", ""), log, result.get("findings"),
            result.get("extracted"), metrics, flags, task_sizes)
        if closing is not None:
            host.held_responses[closing] = response
        else:
            self._respond(response)

    def _need_mb(self, entry):
        """The device memory a job of this task holds: the task's peak (its host's
        reference), its candidate's own (on an accelerator, the arena its task host lends
        it: _arena_mb's), and its session's buffers."""
        peak = entry.facts["peak_mb"]
        own = ARENA_OVER_PEAK * peak + ARENA_SLACK_MB if self.device.is_accelerator else peak
        return peak + own + self._session_mb(entry)

    def _session_mb(self, entry):
        """A child's buffers in its task host: two input slots, a timed call's inputs kept
        until published, the output slot and the copy of a timed call's outputs that is
        judged (reference/host.py)."""
        facts = entry.facts
        return (3 * facts["input_bytes"] + 2 * facts["output_bytes"]) / (1 << 20)

    def _hosts_mb(self, entry):
        """Device memory the task hosts hold (other than `entry`'s own share, which its
        jobs' need counts): what admitted jobs cannot count on."""
        if not self.device.is_accelerator:
            return 0.0
        return sum(e.held_mb for e in self.hosts.entries.values() if e.proc is not None and e is not entry)

    # ---- jobs ----

    def _start(self, job):
        self.trace(job, "start", action=job.action)
        for other in self.jobs:
            other.had_company = True
        job.had_company = bool(self.jobs)
        self.jobs.add(job)
        if job.action == "check":
            try:
                proc = self.fork_child("check", lambda p: child.check_main(
                    job.request, p["result_w"], self.device, self.memory_base))
            except OSError as exc:
                self._finish(job, error(protocol.HARNESS_ERROR, f"cannot start a child process: {exc}"))
                return
            proc.owner, job.proc = job, proc
            return
        if job.language() == "triton" and not toolchain.has_triton():
            self._finish(job, error(protocol.HOST_ERROR,
                                    f"triton is not importable by {sys.executable}: install "
                                    "triton (triton-ascend on an NPU host) to evaluate triton "
                                    "candidates"))
            return
        try:
            job.source = read_task_source(job.request["task"]["path"])
        except protocol.Verdict as verdict:
            self._finish(job, protocol.verdict_result(verdict))
            return
        key = entry_key(job.request["task"], job.source, self.device.name,
                        job.request["options"]["inputs_on_device"], job.seeds.model)
        self._attach(job, self.hosts.entry(key))

    def _attach(self, job, entry):
        job.entry = entry
        entry.users += 1
        if entry.failure is not None:
            self._finish(job, entry.failure)
        elif entry.ready:
            self._host_ready_for(job)
        else:
            entry.waiting.append(job)
            if entry.proc is None and not entry.host_asked:
                # The host's start (the reference built, its self-test) is device work:
                # a step of the entry's, so that no job's end drops it.
                entry.host_asked = True
                self.turns.step(entry, self._guarded(job, lambda: self._start_host(entry, job)))

    # ---- task hosts ----

    def _start_host(self, entry, job):
        self.trace(job, "host_start")
        entry.host_asked = False
        request = job.request
        host_job = {"task": dict(request["task"], source=job.source),
                    "options": {"seed": job.model_seed,
                                "inputs_on_device": request["options"]["inputs_on_device"]},
                    # The first request's limits, its admitted share included: a task
                    # too big for the device fails its self-test as the task's.
                    "limits": request["limits"],
                    "input_seeds": job.seeds.inputs(1), "keep_bytes": self.keep_bytes,
                    "workers": max(1, min(JUDGE_WORKERS, (os.cpu_count() or 1) // 2)),
                    # The hosts' own Triton kernels (judge/fused.py) are compiled into the
                    # server's directory, which no candidate's sandbox shows: a cache a
                    # candidate could write would let it plant the comparison's kernel.
                    "triton_cache": os.path.join(self.root, "triton-cache")}
        try:
            proc = self.fork_child("host", lambda p: child.task_host_main(
                host_job, p["command_r"], p["result_w"], self.device, self.memory_base),
                commands=True, fd_socket=True)
        except OSError as exc:
            self.turns.done(entry)
            self._host_failed(entry, error(protocol.HARNESS_ERROR, f"cannot start the task host: {exc}"),
                              lasting=False)
            return
        proc.owner = entry
        proc.deadline = proc.started + float(request["limits"]["timeout_s"])
        entry.proc = proc
        entry.starter = job

    def _host_message(self, proc, message):
        entry = proc.owner
        if entry.proc is not proc:  # a retired host's last words
            return
        if "ready" in message and entry.facts is None and isinstance(message["ready"], dict):
            self.trace(entry.starter, "host_ready")
            self.turns.done(entry)
            entry.facts = message["ready"]
            proc.deadline = math.inf
            waiting, entry.waiting = entry.waiting, []
            for job in waiting:
                if not job.finished:
                    self._host_ready_for(job)
        elif "failed" in message and entry.facts is None and isinstance(message["failed"], dict):
            result = message["failed"]
            lasting = (result.get("error_class") == protocol.TASK_ERROR
                       and "out_of_memory" not in (result.get("flags") or []))
            entry.proc = None  # it said why it ends: its exit is no news (_host_death)
            self.turns.done(entry)
            self._host_failed(entry, result, lasting)
        elif "result" in message:
            self._host_answer(entry, proc, message)

    def _host_answer(self, entry, proc, message):
        command_id = message.get("id")
        job, callback, wants_fds, stepped = entry.pending.pop(command_id, (None, None, False, False))
        self.trace(job, "host_answered", host=proc.pid, command=command_id)
        try:
            self._host_answered(entry, proc, message, command_id, job, callback, wants_fds)
        finally:
            # After what the answer sets going: a step that follows it (begin()) is in
            # flight before a loop waiting for this one may start.
            if stepped:
                self.turns.done(job)

    def _host_answered(self, entry, proc, message, command_id, job, callback, wants_fds):
        sent = entry.sent_at.pop(command_id, None)
        if isinstance(message.get("held_mb"), (int, float)):
            entry.held_mb = float(message["held_mb"])
        if command_id in proc.held_responses:
            # A session closed: the host may be idle now, and retired (then what it
            # holds is free once it has exited: _host_death sends the response).
            self._close_idle_hosts()
            if entry.proc is proc:
                self._respond(proc.held_responses.pop(command_id))
        fds = proc.take_fds(int(message.get("fds", 0)))
        if not entry.pending:
            proc.deadline = math.inf
        else:
            proc.deadline = min(entry.sent_at.values()) + self._host_timeout(entry)
        if job is None or callback is None:
            for fd in fds:
                os.close(fd)
            return
        recomputed = message.get("recomputed")
        if isinstance(recomputed, int) and recomputed > entry.recomputed:
            entry.recomputed = recomputed
            if "reference_recomputed" not in job.flags:
                job.flags.append("reference_recomputed")  # its outputs did not fit the budget
                job.paid_reference = True
        waited = time.monotonic() - sent if sent is not None else 0.0
        job.host_seconds += waited
        if job.proc is not None:  # the child's limit does not count its wait for the host
            job.proc.deadline += waited
        if job.finished or job.decided is not None:
            for fd in fds:
                os.close(fd)
            return
        result = message["result"] if isinstance(message["result"], dict) else {}
        try:
            if wants_fds:
                callback(job, result, fds)
            else:
                for fd in fds:
                    os.close(fd)
                callback(job, result)
        except Exception:  # noqa: BLE001 - a bug of the server's own must not kill its loop
            traceback.print_exc()
            for fd in fds:
                os.close(fd)
            self._decide(job, error(protocol.HARNESS_ERROR, "the harness failed: " +
                                    traceback.format_exc(limit=3)))

    def _host_timeout(self, entry):
        return max(60.0, max((float(j.request["limits"]["timeout_s"]) for j in self.jobs
                              if j.entry is entry), default=60.0))

    def _host_command(self, entry, job, command, callback, wants_fds=False):
        """Sends `command` to the entry's host as a step of `job`'s (turns.py: held while
        another job's timing loop waits or runs); callback(job, result) follows, or
        callback(job, result, fds) with the descriptors of its answer (`wants_fds`)."""
        asked, held = time.monotonic(), []
        self.trace(job, "host_asked", verb=next(iter(command), None))

        def send():
            job.turn_wait_s += time.monotonic() - asked
            if held:
                self._release_limit(job)
            if job.finished or job.decided is not None:
                self.turns.done(job)
                return
            if self._host_send(entry, job, command, callback, wants_fds, stepped=True) is None:
                self.turns.done(job)

        if not self.turns.step(job, self._guarded(job, send)):
            held.append(True)
            self._hold_limit(job)

    def _host_send(self, entry, job, command, callback, wants_fds=False, stepped=False):
        """Sends `command` to the entry's host now; callback as _host_command's. Returns
        the command's id, or None when the host could not be sent it."""
        if entry.proc is None:  # it died while the command waited for its turn
            if callback is not None:
                self._decide(job, error(protocol.HARNESS_ERROR, "the task host is gone"))
            return None
        entry.next_id += 1
        command_id = entry.next_id
        if callback is not None:
            entry.pending[command_id] = (job, callback, wants_fds, stepped)
            entry.sent_at[command_id] = time.monotonic()
            entry.proc.deadline = min(entry.sent_at.values()) + self._host_timeout(entry)
        self.trace(job, "host_sent", verb=next(iter(command), None), host=entry.proc.pid, command=command_id)
        if not entry.proc.send(dict(command, id=command_id)):
            if callback is not None:
                entry.pending.pop(command_id, None)
                entry.sent_at.pop(command_id, None)
                self._decide(job, error(protocol.HARNESS_ERROR, "the task host is gone"))
            return None
        return command_id

    def _host_failed(self, entry, result, lasting):
        if lasting:  # the task is broken at these sizes: every later request is told at once
            entry.failure = result
        waiting, entry.waiting = entry.waiting, []
        for job in waiting:
            self._finish(job, result)

    def _host_death(self, proc, status):
        for response in proc.held_responses.values():  # what it held is free now
            self._respond(response)
        proc.held_responses.clear()
        entry = proc.owner
        if entry.proc is not proc:  # retired (_close_idle_hosts): it was told to end
            return
        entry.proc = None
        limits = {"timeout_s": self._host_timeout(entry)}
        if entry.facts is None:
            self.turns.done(entry)  # its start ended
            if proc.timed_out:
                result = error(protocol.TASK_ERROR,
                               f"the task's reference did not finish within the wall-clock limit "
                               f"of {limits['timeout_s']:g} s; shrink it (task.sizes, size_scale, "
                               "fit_memory_mb) or raise timeout_s")
            else:
                result = error(protocol.TASK_ERROR, "the task's reference " +
                               death_text(proc, status, None, "") + " before its self-test ended")
                if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL:
                    result["message"] += ": not by the harness; often the kernel's OOM killer"
                    result["flags"] = ["out_of_memory"]
            self._host_failed(entry, result, lasting=not result.get("flags") and not proc.timed_out)
            return
        entry.facts = None
        pending, entry.pending = entry.pending, {}
        entry.sent_at = {}
        what = ("did not answer within its limit" if proc.timed_out
                else death_text(proc, status, None, ""))
        tail = log_tail(os.path.join(proc.workdir, "log.txt"))[-1000:]
        for job, _, _, stepped in pending.values():
            if stepped:
                self.turns.done(job)  # its host is gone: the step is over
            if not job.finished:
                self._decide(job, error(protocol.TASK_ERROR if proc.timed_out else protocol.HARNESS_ERROR,
                                        f"the task host {what}; its log ends with: {tail}"))

    def _close_idle_hosts(self):
        """Retires the hosts beyond what Hosts keeps idle: EOF on its commands ends it; a
        later job of its task starts a new one (the entry keeps its timings and plans)."""
        for entry in self.hosts.idle_to_close():
            entry.proc.close_commands()
            entry.proc, entry.facts, entry.starter = None, None, None

    # ---- a job with its host ready ----

    def _host_ready_for(self, job):
        if job.internal is None:
            # Its need, known now rather than with its verdict: kforge's admission charged
            # a task it had not seen the most any task needed, and now lets others in
            # beside it (PROTOCOL.md: need lines). The device's memory goes with it: until
            # a client knows it, it cannot tell whether anything fits beside this job.
            line = {"id": job.id, "need_mb": self._need_mb(job.entry)}
            if self.device.is_accelerator:
                line["device_memory_mb"] = job.entry.facts["device_memory_mb"] - self._hosts_mb(job.entry)
            self._respond(line)
        if job.internal is not None or job.action == "compile":
            self._open_session(job)
            return
        rule = job.request["options"]["rule"]
        self._host_command(job.entry, job, {"plan": {
            "rule": rule, "seeds": job.seeds.inputs(job.request["options"]["trials"]),
            "varied_seeds": [job.seeds.varied(k) for k in range(len(VARIATIONS))],
            "model_seeds": ([] if job.entry.model_seed is not None else
                            [job.seeds.model_redrawn(k) for k in range(1, WEIGHT_DRAWS)])}}, self._planned)

    def _planned(self, job, result):
        if "varied" not in result:
            if result.get("error_class") == protocol.TASK_ERROR and "out_of_memory" not in (result.get("flags") or []):
                # Nothing makes it vary: it never will. Out of memory beside other jobs,
                # it may fit alone (kforge runs it again so).
                job.entry.failure = result
            self._finish_or_decide(job, result)
            return
        if "model_seed" in result:
            job.entry.model_seed = result["model_seed"]
        if job.entry.model_seed is not None:
            job.flags.append("weights_redrawn")
        job.trials = [(seed, None) for seed in job.seeds.inputs(job.request["options"]["trials"])]
        varied = result["varied"]
        job.trials += [(seed, (scale, shift)) for seed, scale, shift in varied]
        if varied:
            job.flags.append("inputs_varied")
        self._open_when_reference_timed(job)

    def _finish_or_decide(self, job, result):
        if job.proc is not None:
            self._decide(job, result)
        else:
            self._finish(job, result)

    def _open_when_reference_timed(self, job):
        """A timed job's reference is timed before this job's own session and child exist,
        where it has not been timed yet: the reference's buffers and child then never sit
        on the device beside this job's own (at KernelBench's sizes an 80 GB card holds one
        such pair, not two). Timed anew later (a confirmation), both pairs are there."""
        timing = job.timing()
        if timing is None or job.entry.facts.get("timing_refused") or \
                job.entry.stored_timing(job.timing_key(), float(timing["reference_max_age_s"])) is not None:
            self._open_session(job)
            return
        self._time_reference_for(job)

    def _open_session(self, job):
        self._host_command(job.entry, job, {"open": {"arena_mb": self._arena_mb(job)}},
                           self._opened, wants_fds=True)

    def _arena_mb(self, job):
        """The device memory the task host lends `job`'s child for its own allocations
        (handover/arena.py), within the job's share: ARENA_OVER_PEAK times the task's
        peak (_need_mb counts it once as the candidate's own) and ARENA_SLACK_MB."""
        if not self.device.is_accelerator:
            return 0
        arena = ARENA_OVER_PEAK * job.entry.facts["peak_mb"] + ARENA_SLACK_MB
        share = job.request["limits"].get("device_memory_mb")
        return min(arena, float(share)) if share else arena

    def _opened(self, job, result, fds):
        if "session" not in result:
            for fd in fds:
                os.close(fd)
            self._finish_or_decide(job, result)
            return
        job.session = result["session"]
        job.buffers = result["buffers"]
        job.arena_mb = sum(b["nbytes"] for b in job.buffers if b["role"] == "arena") / (1 << 20)
        job.weights = result.get("weights")
        try:
            self._start_candidate(job, fds)
        finally:
            for fd in fds:
                os.close(fd)

    # ---- the candidate child ----

    def _candidate_job(self, job, workdir):
        request = job.request
        facts = job.entry.facts
        task = dict(request["task"], source=job.source, modules=facts.get("task_modules", []))
        if facts.get("fitted"):  # run at the sizes the fitter chose for the reference
            task.update(sizes=facts["task_sizes"], size_scale=1.0, fit_memory_mb=0)
        return {"action": job.action, "task": task,
                "candidate": dict(request["candidate"],
                                  artifact=_copy_artifact(request["candidate"].get("artifact"), workdir)),
                "options": {"seed": job.model_seed,
                            "inputs_on_device": request["options"]["inputs_on_device"]},
                "limits": request["limits"], "buffers": job.buffers, "weights": job.weights,
                "file_size_mb": None}

    def _start_candidate(self, job, fds):
        network = bool(job.request["limits"]["network"])
        try:
            if self.standby is not None and not network:
                proc, self.standby = self.standby, None
            else:
                proc = self._fork_candidate(network)
        except OSError as exc:  # out of descriptors, processes or scratch space
            self._finish(job, error(protocol.HARNESS_ERROR, f"cannot start a child process: {exc}"))
            return
        proc.owner, job.proc = job, proc
        self.trace(job, "child_start")
        proc.started = time.monotonic()
        proc.deadline = proc.started + float(job.request["limits"]["timeout_s"])
        self.turns.begin(proc)  # its set-up, until it is ready (or the child is gone)
        if not proc.send({"job": self._candidate_job(job, proc.workdir)}, fds):
            self._decide(job, error(protocol.HARNESS_ERROR, "the candidate's child is gone"))
        self._refill_standby()

    def _refill_standby(self):
        """Forks the next standby. Only here, at start and after a dispatch: a standby
        that keeps dying is then replaced at most once per request."""
        if self.mode == "fork" and self.standby is None and self.stdin_open:
            try:
                self.standby = self._fork_candidate(False)
            except OSError as exc:  # requests then fork their own children
                print(f"kforge_harness: cannot fork a standby child: {exc}", file=sys.stderr)

    def _fork_candidate(self, network):
        """A candidate child: from the zygote (fork mode), or a fresh interpreter (spawn)."""
        if self.mode == "spawn":
            return self.fork_child("candidate", lambda p: self._exec_candidate(p, network),
                                   commands=True)
        workdir, log_fd, (result_r, result_w), (command_r, command_w) = self._child_channels(True, False)
        try:
            pid = self.zygote.fork({"workdir": workdir, "hidden": self._hidden_paths(),
                                    "network": network}, [log_fd, result_w, command_r])
        except OSError:
            for fd in (result_r, command_w):
                os.close(fd)
            shutil.rmtree(workdir, ignore_errors=True)
            raise
        finally:
            for fd in (log_fd, result_w, command_r):
                os.close(fd)
        return self._register("candidate", pid, workdir, result_r, command_w, False)

    def _hidden_paths(self):
        return [self.root]

    def _exec_candidate(self, pipes, network):
        for fd in (pipes["result_w"], pipes["command_r"]):
            os.set_inheritable(fd, True)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (HARNESS_DIR, env.get("PYTHONPATH")) if p)
        argv = [sys.executable, "-m", "kforge_harness", "child", "--workdir", pipes["workdir"],
                "--result-fd", str(pipes["result_w"]), "--command-fd", str(pipes["command_r"]),
                "--device", self.device.name, "--memory-base", str(self.memory_base),
                "--sandbox-view", os.path.join(self.root, SANDBOX_VIEW_FILE)]
        for path in self._hidden_paths():
            argv += ["--hidden", path]
        if network:
            argv.append("--network")
        os.execve(sys.executable, argv, env)

    def _candidate_message(self, proc, message):
        now = time.monotonic()  # a timed call's end, as the server's clock sees it
        job = proc.owner
        if self.trace:
            self.trace(job, "child", message=next(iter(message), None))
        if job is None or job.decided is not None or job.finished:
            return
        if not job.marker:  # still the harness's own code in that child: trusted
            if isinstance(message.get("harness_flags"), list):
                job.flags += [f for f in message["harness_flags"] if isinstance(f, str)]
            elif isinstance(message.get("harness_failed"), str):
                job.harness_failed = message["harness_failed"]
            elif message.get("candidate_code") == "start":
                job.marker = True
                # Harness code until the build command: nothing below the supervisor forks
                # now, and whatever the candidate starts later is born in the cgroup.
                if self.freezer is not None:
                    proc.cgroup = self.freezer.group(descendants(proc.pid))
                # The process the candidate's code will run in, found before any of it
                # runs: it cannot point the task host's reads elsewhere (a process of its
                # own made a sibling of the worker with CLONE_PARENT, say).
                proc.worker = sandbox_worker(proc.pid)
                job.proc.send({"build": True})
            return
        # From here on, what the child says is data about the candidate's run, no more.
        if job.freezing is not None:
            # The child answers commands only, and it has answered the last one.
            self._decide(job, fail(protocol.RUNTIME_ERROR,
                                   "the candidate's process wrote to the harness's channel while "
                                   "it was being frozen between timed calls"))
        elif "failed" in message:
            self._decide(job, self._candidate_failure(message["failed"], job.language()))
        elif message.get("ready") is True and not job.ready:
            job.ready = True
            if not self._weights_follow(job):
                self.turns.done(proc)
            self._candidate_ready(job)
        elif isinstance(message.get("weights"), dict) and job.ready and not job.weights_loaded:
            # The child's set-up step ends here where the reference's weights are copied
            # into ModelNew after its `ready`: that copy is device work (synchronised
            # before this line), which no neighbour's loop may share the device with.
            job.weights_loaded = True
            if self._weights_follow(job):
                self.turns.done(proc)
            self._candidate_weights(job, message["weights"])
        elif "trial" in message:
            if not job.trial_sent:
                self._decide(job, fail(protocol.RUNTIME_ERROR,
                                       "the candidate's process reported a trial it was not asked for"))
                return
            job.trial_sent = False
            self.turns.done(proc)
            self._candidate_trial(job, message)
        elif job.loop is not None and message.get("prepared") is True and not job.loop.prepared:
            job.loop.prepared = True
            self._freeze_then(job, self._loop_fill)
        elif job.loop is not None and "prepared_for" in message:
            if message["prepared_for"] != job.loop.preparing or job.loop.preparing is None:
                self._decide(job, fail(protocol.RUNTIME_ERROR, "the candidate's process reported "
                                       "a timed call's preparation it was not asked for"))
                return
            job.loop.preparing = None
            self._freeze_then(job, self._loop_open)
        elif job.loop is not None and "called" in message:
            if not job.loop.call_sent:
                # Sent while its processes were to be stopped (before its thaw): what it
                # reports there is no call of the bracket's.
                self._decide(job, fail(protocol.RUNTIME_ERROR, "the candidate's process reported "
                                       "a timed call before it was commanded"))
                return
            job.loop.call_sent = False
            self._loop_called(job, message, now)

    def _candidate_ready(self, job):
        if job.internal is not None:
            self._start_loop(job, "reference")
        elif job.action == "compile":
            if job.language() == "triton":  # Triton compiles a kernel at its first launch
                job.trials = [(job.seeds.inputs(1)[0], None)]
                self._next_trial(job)
            else:
                self._decide(job, {"status": "pass"}, stop=False)
        else:
            self._next_trial(job)

    @staticmethod
    def _weights_follow(job):
        """Whether the child copies the reference's weights after its `ready`."""
        return job.weights is not None

    @staticmethod
    def _candidate_weights(job, report):
        """What the child says it did with the reference's weights: data for a flag (a
        parameter that got no copy keeps its own values, and the comparison then fails
        unless the candidate does not use it), never a verdict."""
        missed = report.get("not_copied"), report.get("unused")
        if any(isinstance(names, list) and names for names in missed):
            job.flags.append("weights_not_copied")

    # ---- trials ----

    def _next_trial(self, job):
        seed, transform = job.trials[job.next_trial]
        self._host_command(job.entry, job, {"fill": {
            "session": job.session, "slot": job.next_trial % 2, "seed": seed,
            "transform": list(transform) if transform else None, "trial": True}}, self._trial_filled)

    def _trial_filled(self, job, result):
        if "inputs" not in result:
            self._decide(job, result)
            return
        seed, _ = job.trials[job.next_trial]
        self.turns.begin(job.proc)  # the trial, until its report (or the child is gone)
        job.trial_sent = True
        job.proc.send({"go": job.next_trial, "slot": job.next_trial % 2, "inputs": result["inputs"],
                       "output": result["output"], "seed": seed})

    def _trial_label(self, job):
        seed, transform = job.trials[job.next_trial]
        label = f"trial {job.next_trial + 1}"
        if transform is not None:
            label += f" (inputs varied: x*{transform[0]:g}{transform[1]:+g})"
        return label

    def _candidate_trial(self, job, message):
        if message.get("trial") != job.next_trial or job.next_trial >= len(job.trials) or job.loop is not None:
            self._decide(job, fail(protocol.RUNTIME_ERROR,
                                   "the candidate's process reported a trial it was not asked for"))
            return
        refused = _guard_violations(message)
        if refused:
            self._decide(job, fail(protocol.CHEAT_DETECTED,
                                   f"{self._trial_label(job)}: runtime guard: {refused}"))
            return
        mismatch = _mismatch(message)
        if mismatch is not None:
            self._decide(job, fail(mismatch[0], f"{self._trial_label(job)}: {mismatch[1]}"))
            return
        if job.action == "compile":
            self._decide(job, {"status": "pass"}, stop=False)
            return
        seed, transform = job.trials[job.next_trial]
        facts = message.get("facts") if isinstance(message.get("facts"), dict) else {}
        self._host_command(job.entry, job, {"judge": {
            "session": job.session, "slot": job.next_trial % 2, "seed": seed,
            "transform": list(transform) if transform else None, "label": self._trial_label(job),
            "rule": job.request["options"]["rule"], "report": facts}}, self._trial_judged)

    def _trial_judged(self, job, result):
        metrics = result.get("metrics") or {}
        if result.get("status") != "pass":
            if result.get("status") == "fail":
                result = dict(result, metrics=dict(metrics, failed_trial=job.next_trial + 1))
            self._decide(job, result)
            return
        job.trial_metrics.append(metrics)
        job.next_trial += 1
        if job.next_trial < len(job.trials):
            self._next_trial(job)
        elif job.timing() is not None and job.entry.facts.get("timing_refused"):
            # Nothing of this task can be timed that a candidate could not know before
            # its call (kbx_calls.py): correct, and said why it has no time.
            self._decide(job, {"status": "pass", "metrics": self._correctness_metrics(job),
                               "flags": ["timing_refused"],
                               "message": f"not timed: {job.entry.facts['timing_refused']}"}, stop=False)
        elif job.timing() is not None:
            job.timing_started = time.monotonic()
            self._start_timing(job)
        else:
            self._decide(job, {"status": "pass", "metrics": self._correctness_metrics(job)}, stop=False)

    @staticmethod
    def _correctness_metrics(job):
        metrics = compare.combined([m for m in job.trial_metrics if m])
        metrics["trials"] = len(job.trial_metrics)
        return metrics

    # ---- timing (timing_plan.py has the exchange) ----

    def _start_timing(self, job):
        """The candidate's timing loop once the reference's timing is known: measured by
        an internal job (the reference as its own candidate, in a child of the zygote,
        through the same loop) when the entry has none fresh enough."""
        if job.entry.stored_timing(job.timing_key(), float(job.timing()["reference_max_age_s"])) is not None:
            self._start_loop(job, job.next_loop)
            return
        # The reference is timed while this candidate's processes are stopped: nothing of
        # its own (a thread, a timer, a process it left) runs beside the reference's loop
        # to slow it, and its wall-clock limit does not count the wait.
        self._freeze_then(job, self._await_reference_timing)

    def _await_reference_timing(self, job):
        timing = job.timing()
        key = job.timing_key()
        entry = job.entry
        if entry.stored_timing(key, float(timing["reference_max_age_s"])) is not None:
            self._start_loop(job, job.next_loop)  # timed for another job while it froze
            return
        job.reference_wait_from = time.monotonic()
        self._hold_limit(job)
        self._time_reference_for(job)

    def _time_reference_for(self, job):
        """`job` waits for its reference's timing: started now, unless already under way."""
        key, entry = job.timing_key(), job.entry
        entry.timing_waiters.setdefault(key, []).append(job)
        if key not in entry.timing_job:
            job.paid_reference = True
            self.next_internal += 1
            request = dict(job.request, id=f"reference-timing-{self.next_internal}", action="run",
                           candidate={"code": None, "language": "python", "artifact": None})
            internal = Job(request, internal={"key": key})
            internal.seeds, internal.source = job.seeds, job.source
            entry.timing_job[key] = internal
            self._attach(internal, entry)

    def _reference_timed(self, job, result):
        """An internal job ended: its record, or its failure, goes to the jobs waiting."""
        entry, key = job.entry, job.internal["key"]
        entry.timing_job.pop(key, None)
        waiting = entry.timing_waiters.pop(key, [])
        if result.get("status") == "pass" and "record" in result:
            entry.timings[key] = result["record"]
            for waiter in waiting:
                if waiter.finished or waiter.decided is not None:
                    continue
                if waiter.session is None:  # timed before its own session (_open_when_reference_timed)
                    self._open_session(waiter)
                else:
                    self._start_loop(waiter, waiter.next_loop)
            return
        message = result.get("message", "")
        if result.get("error_class") == protocol.OUT_OF_MEMORY or "out_of_memory" in (result.get("flags") or []):
            # The reference ran at its self-test's size; out of memory now, it is the
            # company's doing (other jobs, this one's own buffers), not the task's.
            failure = error(protocol.HARNESS_ERROR, "the task's reference could not be timed beside the other "
                                                    f"work on the device: {message}")
            failure["flags"] = ["out_of_memory"]
        elif result.get("error_class") == protocol.HARNESS_ERROR:
            # The harness failed around the reference's loop (its own code raised, a task
            # host's step broke): the task did nothing wrong.
            failure = error(protocol.HARNESS_ERROR, f"the task's reference could not be timed: {message}")
        else:
            failure = error(protocol.TASK_ERROR, f"the task's reference could not be timed: {message}")
        for waiter in waiting:
            if not waiter.finished and waiter.decided is None:
                self._decide(waiter, failure)

    def _start_loop(self, job, label):
        """Runs `job`'s `label` loop once it has the device alone (turns.py)."""
        asked = time.monotonic()
        self._hold_limit(job)  # waiting for its turn is no part of its time
        self.trace(job, "loop_asked", label=label)

        def start():
            if job.finished or job.decided is not None:  # ended while its neighbours stopped
                return
            self.trace(job, "loop_started", label=label)
            job.turn_wait_s += time.monotonic() - asked
            self._release_limit(job)
            self._run_loop(job, label)

        # Once the neighbours the turn stopped are seen stopped (_advance_pause).
        self.turns.alone(job, lambda: self._after_neighbours_stop(self._guarded(job, start)),
                         own=(job.proc,) if job.proc is not None else ())

    def _run_loop(self, job, label):
        if job.reference_wait_from is not None:
            job.reference_wait_from = None
            self._release_limit(job)
            if not self._still_frozen(job):
                self._decide(job, fail(protocol.CHEAT_DETECTED,
                                       "the candidate's processes ran while the reference was "
                                       "timed (stopped for it, one was continued or ended): "
                                       "work beside the reference's loop that slows it"))
                return
        if label in ("timing", "confirm"):  # what the loop is judged against, kept with it
            job.reference = job.entry.timings.get(job.timing_key())
            if job.reference is None:
                # Dropped while this job waited for its turn (another job's confirmation
                # times the reference anew): it waits for that timing too.
                self.turns.release(job)
                self._start_timing(job)
                return
        job.loop = timing_plan.Loop(label, job.timing())
        if self.outputs_unread is None:
            job.loop.read_from = job.proc.worker
        self._continue(job.proc)
        job.proc.send({"time": {"label": label, "compile": label == "compiled"}})

    def _pause_neighbours(self, owner):
        """`owner`'s loop has the device: the other jobs' candidate processes stop until
        it ends (whatever threads of their own would run beside it; a decided job's too,
        until its child is gone), their wall-clock limits suspended. Those stopped for
        their own timing stay as they are."""
        for job in self.jobs:
            if job is owner or job.proc is None or job.action == "check" or \
                    job.reference_wait_from is not None or job.freezing is not None:
                continue
            if job.proc.cgroup is not None:
                job.proc.cgroup.start_freeze()
            else:
                signal_tree(job.proc.pid, signal.SIGSTOP)
                job.paused_frozen = None
            self._hold_limit(job)
            self.paused.append(job)

    def _after_neighbours_stop(self, then):
        signals = any(job.proc.cgroup is None for job in self.paused)
        patience = SIGNAL_FREEZE_PATIENCE_S if signals else freezer.FREEZE_PATIENCE_S
        self.pausing = (then, time.monotonic() + patience)
        self._advance_pause()

    def _advance_pause(self):
        """Starts the loop once every neighbour stopped for it is seen stopped (a task in a
        long system call freezes only when it leaves it); one that has not stopped within
        a freeze's patience is ended: it worked beside another job's timed calls. One
        stopped by signals can continue itself (a timer whose signal is SIGCONT): what it
        has run is noted once it is seen stopped, and looked at again when the loop ends
        (_resume_neighbours)."""
        then, deadline = self.pausing
        moving = []
        for job in self.paused:
            if job.finished:
                continue
            if job.proc.cgroup is not None:
                if not job.proc.cgroup.frozen():
                    moving.append(job)
            elif job.paused_frozen is None:
                frozen = freeze_tree(job.proc.pid, FREEZE_STEP_S)
                if frozen is None:
                    moving.append(job)
                else:
                    job.paused_frozen, job.paused_used = frozen, cpu_used(frozen)
        if moving and time.monotonic() <= deadline:
            return
        self.pausing = None
        for job in moving:
            if job.decided is None:
                self._decide(job, fail(protocol.CHEAT_DETECTED,
                                       "its processes did not stop while another job's timing loop "
                                       "had the device: work beside other jobs' timed calls"))
            else:
                kill_group(job.proc.pid)  # after its verdict: it is only stopped for good
        then()

    def _resume_neighbours(self, owner):
        paused, self.paused = self.paused, []
        for job in paused:
            if job.finished:
                continue
            self._release_limit(job)
            frozen, job.paused_frozen = job.paused_frozen, None
            if frozen is not None and job.decided is None and \
                    not still_frozen(job.proc.pid, frozen, job.paused_used):
                self._decide(job, fail(protocol.CHEAT_DETECTED,
                                       "its processes ran while another job's timing loop had the "
                                       "device (stopped for it, one was continued or ended): work "
                                       "beside other jobs' timed calls"))
                continue
            self._continue(job.proc)

    @staticmethod
    def _hold_limit(job):
        """Suspends `job`'s child's wall-clock limit while it waits for other jobs' loops
        (nested waits count; the limit runs again when the last ends)."""
        if job.proc is None:
            return
        if job.limit_holds == 0:
            job.limit_left = job.proc.deadline - time.monotonic()
            job.proc.deadline = math.inf
        job.limit_holds += 1

    @staticmethod
    def _release_limit(job):
        if job.proc is None or job.limit_holds == 0:
            return
        job.limit_holds -= 1
        if job.limit_holds == 0:
            job.proc.deadline = time.monotonic() + job.limit_left

    def _guarded(self, job, step):
        """`step` as the turns call it, later and from whichever handler frees the
        device: a bug of the server's own there decides `job`, never ends the loop."""
        def run():
            try:
                step()
            except Exception:  # noqa: BLE001
                traceback.print_exc()
                self._decide(job, error(protocol.HARNESS_ERROR, "the harness failed: " +
                                        traceback.format_exc(limit=3)))
        return run

    def _freeze_then(self, job, then):
        """Stops the candidate's processes between timed calls, then calls then(job): at
        once where they stop at once, else from the main loop once they have, so that a
        tree slow to stop (a task held in a long system call) holds up only its own job,
        never the server's other jobs and their clocks. A tree that has not stopped by its
        deadline is the candidate's cheat."""
        patience = freezer.FREEZE_PATIENCE_S if job.proc.cgroup is not None else SIGNAL_FREEZE_PATIENCE_S
        if job.proc.cgroup is not None:
            job.proc.cgroup.start_freeze()
        job.freezing = (then, time.monotonic() + patience)
        self.freezing.add(job)
        self._advance_freeze(job)

    def _advance_freeze(self, job):
        then, deadline = job.freezing
        if job.decided is not None or job.finished:
            job.freezing = None
            self.freezing.discard(job)
            return
        if job.proc.cgroup is not None:
            held = job.proc.cgroup.frozen_within(FREEZE_STEP_S)
        else:
            # Each step sends its stops again: a process continued by another since the
            # last step is stopped anew, and the tree must be seen stopped whole.
            job.frozen = freeze_tree(job.proc.pid, FREEZE_STEP_S)
            held = job.frozen is not None
            if held:
                job.frozen_used = cpu_used(job.frozen)
        if held:
            job.freezing = None
            self.freezing.discard(job)
            then(job)
        elif time.monotonic() > deadline:
            job.freezing = None
            self.freezing.discard(job)
            how = ("did not freeze within the time a freeze takes (a task stayed in the kernel)"
                   if job.proc.cgroup is not None else
                   "would not stay stopped (they continue each other)")
            when = f"{job.loop.label}: " if job.loop is not None else "before its timing: "
            self._decide(job, fail(protocol.CHEAT_DETECTED,
                                   f"{when}the candidate's processes {how} between "
                                   "timed calls: work between calls that no clock brackets"))

    @staticmethod
    def _still_frozen(job):
        if job.proc.cgroup is not None:
            return job.proc.cgroup.frozen()
        return still_frozen(job.proc.pid, job.frozen, job.frozen_used)

    @staticmethod
    def _continue(proc):
        """Lets the child's processes run again (to be killed, or for a timed call)."""
        if proc.cgroup is not None:
            proc.cgroup.thaw()
        signal_tree(proc.pid, signal.SIGCONT)

    def _loop_fill(self, job):
        loop = job.loop
        seed = loop.seed_for_next()
        loop.fill_sent = time.monotonic()
        self._host_command(job.entry, job, {"fill": self._timed_fill(job, seed)}, self._loop_filled)

    @staticmethod
    def _timed_fill(job, seed, call=None):
        """The `fill` of timed call `call` (the loop's next one unless given)."""
        slot = (job.loop.next_call if call is None else call) % 2
        return {"session": job.session, "slot": slot, "seed": seed, "trial": False,
                "known": slot in job.layouts_sent}

    def _loop_filled(self, job, result, host_ms=None):
        if "inputs" not in result and not result.get("layouts_unchanged"):
            self._decide(job, result)
            return
        loop = job.loop
        call = loop.next_call
        host_ms = result.get("host_ms") if host_ms is None else host_ms
        # The exchange with the task host just now, less the host's own work: what a round
        # trip with a process costs on this machine at this moment (trusted on both ends).
        loop.exchange_now = max(0.0, (time.monotonic() - loop.fill_sent) * 1e3 -
                                (host_ms if isinstance(host_ms, (int, float)) else 0.0))
        if not self._still_frozen(job):
            self._decide(job, fail(protocol.CHEAT_DETECTED,
                                   f"{loop.label}: the candidate's processes ran between timed "
                                   "calls (one ended or was continued while they were stopped): "
                                   "work that no clock brackets"))
            return
        # The call's preparation (candidate.py's _timed_loop): the harness's work in the
        # child around the call, done while no clock runs, so that the bracket holds none
        # of it. The child learns the layouts only: the slot does not hold the call's
        # inputs yet, and the seed they were made from comes with the call.
        loop.preparing = call
        loop.prepare_sent = time.monotonic()
        # Values made from the call's seed (a number among its inputs, a kernelbenchx
        # unit's calls) are the call's inputs themselves: the task host keeps them out
        # of the description (`input_values`), and they go with the call, inside its
        # bracket. Known in the preparation, whatever a forward computes from them alone
        # could be computed there, within the allowance its timing gives load
        # (timing_plan.Loop.seen): a whole forward, where it is small and its numbers many.
        loop.call_inputs = {"input_values": result["input_values"]} if "input_values" in result else {}
        self._thaw(job)
        prepare = {"prepare": call, "slot": call % 2, "read": loop.read_from is not None}
        if result.get("layouts_unchanged"):
            prepare["layouts_unchanged"] = True
        else:
            prepare.update(inputs=result["inputs"], output=result["output"])
            job.layouts_sent.add(call % 2)
        job.proc.send(prepare)

    def _loop_open(self, job):
        """The child prepared its call and is stopped again: the call's bracket opens."""
        loop = job.loop
        call = loop.next_call
        loop.preparation_done(loop.prepare_sent, time.monotonic())
        command = {"call": call, "seed": loop.seeds[call], **loop.call_inputs}
        # The call's bracket opens before its inputs reach the slot the child maps (the
        # task host staged them: host.py's `publish`) and before the child is continued:
        # whatever works on them from then on (a handler of SIGCONT, a thread that was
        # waiting, a kernel that outlived an earlier call) is the call's time.
        loop.commanded_at = time.monotonic()
        self._host_command(job.entry, job, {"publish": {
            "session": job.session, "slot": call % 2, "read": loop.read_from is not None,
            "flush_l2": bool(loop.timing["flush_l2"])}},
                           lambda job, result: self._loop_published(job, command, result))

    def _loop_published(self, job, command, result):
        if result.get("published") is not True:
            self._decide(job, result)
            return
        if not self._still_frozen(job):
            # Continued while the inputs were published (a timer's SIGCONT, where the
            # processes are stopped by signals): work on them before its thaw.
            self._decide(job, fail(protocol.CHEAT_DETECTED,
                                   f"{job.loop.label}: the candidate's processes ran while the "
                                   "call's inputs were published, before the call: work that "
                                   "its command does not start"))
            return
        # Thawed first: a call's command can outgrow the socket's buffer (a kernelbenchx
        # unit's calls), and a stopped child does not read (sent before the thaw, a unit
        # of 60000 floats held the server in its write for good).
        self._thaw(job)
        job.loop.call_sent = True
        job.proc.send(command)

    def _thaw(self, job):
        """Continues the child's processes that _freeze_then stopped."""
        if job.proc.cgroup is not None:
            job.proc.cgroup.thaw()
        else:
            continue_tree(job.frozen)  # every call follows _frozen()

    def _loop_called(self, job, message, now):
        # The call's bracket closes once the task host holds a copy of its outputs (host.py's
        # `take`), not at the child's word: what the candidate finishes after reporting (a
        # kernel in a context of its own runs on) is inside the bracket if the copy has it,
        # and is not judged if it does not. The child's processes are stopped first; the
        # copy, the call's checks and the next call's inputs are then one exchange with
        # the host (its `step`).
        if job.loop.read_from is not None:
            # Read out of the child once its processes are stopped (handover/read.py): a copy
            # nobody in them can skip, shorten or work beside. The bracket closes when they
            # are all stopped: nothing of the candidate runs after that, and the read's own
            # cost (which depends on how the candidate's pages are mapped) is no one's time.
            self._freeze_then(job, lambda job: self._loop_close(job, message, {
                "session": job.session, "read": {"pid": job.loop.read_from,
                                                 "addresses": message.get("outputs_at")}},
                time.monotonic()))
            return
        # Copied when the child rang (handover/doorbell.py), or now by `take`: the bracket
        # closes at that copy.
        self._freeze_then(job, lambda job: self._loop_close(job, message, {"session": job.session}, None))

    def _loop_close(self, job, message, take, frozen_at):
        """The host's `step` for the call just reported: its outputs taken (`take`), its
        checks, and the next call's inputs where one follows."""
        loop = job.loop
        call = loop.next_call
        last = call + 1 == loop.calls
        after = {"session": job.session, "slot": call % 2, "seed": loop.seeds[call],
                 "check": loop.check_drawn(call), "label": loop.label_of(call),
                 "rule": job.request["options"]["rule"]}
        step = {"take": take, "after": after}
        if isinstance(message.get("facts"), dict) and job.entry.facts.get("timed_unit"):
            # A kernelbenchx unit's results, named (no other task's calls report any). The
            # next call's inputs are then asked for apart: the exchange that measures a
            # round trip's cost (`exchange_now`, taken off the next call's bracket) carries
            # nothing the candidate wrote, whose size would make it whatever it wants.
            after["report"] = message["facts"]
        elif not last:
            loop.fill_sent = time.monotonic()
            step["fill"] = self._timed_fill(job, loop.seed_for_next(), call + 1)
        self._host_command(job.entry, job, {"step": step},
                           lambda job, result: self._loop_stepped(job, message, result, frozen_at))

    def _loop_stepped(self, job, message, result, frozen_at):
        taken = result.get("taken")
        if not isinstance(taken, dict):
            self._decide(job, result)
            return
        if "unread" in taken:
            self._loop_unread(job, taken["unread"])
            return
        taken_at = taken.get("taken_at")
        if not isinstance(taken_at, (int, float)) or isinstance(taken_at, bool):
            self._decide(job, taken)
            return
        if taken.get("from") == "slot" and "outputs_copied_in_child" not in job.flags:
            # The task host copied the output slot, into which the child's process copied
            # its outputs (the host could read them neither out of it nor out of its
            # arena): that copy is in the call's bracket, the candidate's time.
            job.flags.append("outputs_copied_in_child")
        loop = job.loop
        ended = frozen_at if frozen_at is not None else taken_at
        try:
            loop.called(message, (ended - loop.commanded_at) * 1e3 if loop.commanded_at is not None else math.nan)
        except ValueError as exc:
            self._decide(job, fail(protocol.RUNTIME_ERROR, str(exc)))
            return
        mismatch = _mismatch(message)
        if mismatch is not None:
            self._decide(job, fail(mismatch[0], f"{loop.label_of(loop.next_call - 1)}: {mismatch[1]}"))
            return
        after, filled = result.get("after"), result.get("filled")
        if not isinstance(after, dict) or after.get("status") != "pass":
            self._loop_after(job, after if isinstance(after, dict) else result)
            return
        if loop.finished:
            self._loop_done(job)
        elif filled is None:  # a kernelbenchx unit's call: its inputs apart (_loop_close)
            self._loop_fill(job)
        else:
            self._loop_filled(job, filled, result.get("host_ms"))

    def _loop_unread(self, job, why):
        call = job.loop.label_of(job.loop.next_call)
        if job.internal is None:
            self._decide(job, fail(protocol.CHEAT_DETECTED, f"{call}: {why}"))
        elif self.outputs_unread is None:
            # The reference's own child could not be read: something on this machine
            # (a security module's ptrace rule) forbids what available() found allowed.
            # Outputs cross by the child's copy from now on; this loop starts again so.
            self.outputs_unread = f"the reference's {why}"
            print(f"kforge: {call}: the reference's {why}; timed outputs "
                  "are copied by the child from now on", file=sys.stderr, flush=True)
            self._start_loop(job, job.loop.label)
        else:
            self._decide(job, error(protocol.HARNESS_ERROR, f"{call}: the reference's {why}"))

    def _loop_after(self, job, result):
        if result.get("status") != "pass":
            self._decide(job, dict(result, metrics=dict(self._correctness_metrics(job),
                                                        **(result.get("metrics") or {}))))
            return
        self._loop_done(job)

    def _loop_done(self, job):
        loop = job.loop
        self.trace(job, "loop_done", label=loop.label)
        self.turns.release(job)
        if job.internal is not None:
            self._reference_loop_done(job)
            return
        reference = job.reference
        why = anticheat_timing.violation(loop, reference)
        if why is not None and not job.asked_again:
            # Load comes and goes: the reference's loop and this one again, before a
            # rejection.
            self._time_again(job)
            return
        measured = timing_plan.charged(loop, reference)
        if why is not None:
            # Measured again and still beyond the bound: work hidden from the candidate's
            # events, or load that came back (a loaded 2-core machine added 7 ms to an
            # honest call's exchange). Not to be told apart, so not rejected: the server's
            # clock times the candidate (charged()), and a speedup counts only as far as
            # that clock shows it, which hidden work cannot shrink.
            job.flags.append("timing_by_clock")
            job.timed_by_clock = why
        elif timing_plan.clock_disagrees(measured) and not job.asked_again:
            self._time_again(job)
            return
        if job.first_loop is None:
            speedup = reference["summary"]["ms"] / measured["ms"]
            if timing_plan.confirmation_needed(job.timing(), speedup):
                # A speedup is confirmed against a reference timed anew, just before: load
                # that slowed the first reference's loop and not the candidate's (seen: a
                # kernelbenchx memo at 1.21x, a reference gap of 5.6 ms against 1.3 ms)
                # would otherwise be counted twice.
                job.first_loop = (loop, measured, reference)
                self._time_reference_anew(job, "confirm")
                return
            self._timed_pass(job, reference, measured, [], loop.metrics("timing"),
                             within_noise=speedup > 1.0)
            return
        first, first_measured, first_reference = job.first_loop
        counted_reference, counted_measured = timing_plan.counted(
            (first_reference, first_measured), (reference, measured))
        self._timed_pass(job, counted_reference, counted_measured, ["speedup_confirmed"],
                         dict(loop.metrics("confirm"), **first.metrics("timing"),
                              timing_reference_ms=first_reference["summary"]["ms"],
                              confirm_reference_ms=reference["summary"]["ms"]))

    def _time_reference_anew(self, job, label):
        """The reference's loop again (the record this job was judged by is dropped), then
        this job's `label` loop, judged against the new one."""
        key = job.timing_key()
        if job.entry.timings.get(key) is job.reference:
            del job.entry.timings[key]
        job.next_loop = label
        self._start_timing(job)

    def _time_again(self, job):
        """The reference's loop and this job's again, back to back (once per job): what
        its loop is judged against, measured under the load of now."""
        job.asked_again = True
        job.first_loop = None
        self._time_reference_anew(job, "timing")

    def _reference_loop_done(self, job):
        """The reference's own loop ended: with `baseline: compile`, a second loop times
        torch.compile's build of it (in the same child); then the record is kept."""
        loop = job.loop
        if loop.label == "reference":
            job.record = loop.record(time.time())
            # Its gap holds that copy, refunded to every candidate: a candidate that
            # skips its own gains it (the verdicts say so: reference_outputs_copied).
            job.record["outputs_copied"] = "outputs_copied_in_child" in job.flags
            if job.timing()["baseline"] == "compile" and job.entry.facts.get("can_compile"):
                self._start_loop(job, "compiled")
                return
        else:
            job.record["compile_ms"] = summarise(loop.timed(loop.event_ms))["ms"]
        self._decide(job, {"status": "pass", "record": job.record}, stop=False)

    def _timed_pass(self, job, reference, measured, flags, loop_metrics, within_noise=False):
        """The verdict of a timed job. `within_noise`: a speedup above 1 but not above
        `confirm_speedup`, which no second loop measured: it counts as 1.0 (flag
        `speedup_within_noise`, the loop's own in `measured_speedup`), since only a
        confirmed speedup counts above 1. Identical code lands above 1 half the time, and
        confirming each such landing cost two loops more for nothing to report."""
        metrics = self._correctness_metrics(job)
        metrics.update(loop_metrics)
        metrics.update(timing_plan.statistics_metrics("reference", reference["summary"]))
        metrics.update(timing_plan.statistics_metrics("candidate", measured))
        cand_ms = measured["ms"]
        metrics.update(timing_seconds=time.monotonic() - job.timing_started,
                       speedup=reference["summary"]["ms"] / cand_ms,
                       reference_age_s=time.time() - reference["measured_at"],
                       reference_gap_ms=reference["gap_ms"],
                       reference_harness_ms=reference.get("harness_ms", 0.0),
                       reference_inputs_ms=reference.get("inputs_ms", 0.0),
                       timing_charged_ms=measured.get("charged_ms", 0.0),
                       timing_measured_again=int(job.asked_again))
        if within_noise:
            metrics["measured_speedup"], metrics["speedup"] = metrics["speedup"], 1.0
            flags.append("speedup_within_noise")
        if metrics["reference_inputs_ms"] > float(job.timing()["max_harness_refund_ms"]):
            # The inputs were made in the child inside every call's bracket, charged as the
            # call's time beyond the refund (timing_plan.refunded_gap): the speedup is
            # understated by it.
            flags.append("inputs_made_in_call")
        if measured.get("below_clock_resolution"):
            flags.append("below_clock_resolution")
        if reference.get("outputs_copied"):
            flags.append("reference_outputs_copied")
        if metrics["speedup"] > SPEEDUP_FLAG_LIMIT:
            flags.append("speedup_over_10x")
        message = ""
        unit = job.entry.facts.get("timed_unit")
        if unit is not None:  # kernelbenchx: the calls of a test run a timed call replays
            metrics.update(timed_unit_calls=unit["calls"], timed_unit_calls_left_out=unit["left_out"])
            if unit["left_out"]:
                flags.append("timed_calls_left_out")
                message = f"timed {unit['calls']} of the test code's calls; left out: {unit['why']}"
        if job.timed_by_clock is not None:
            message = "; ".join(filter(None, (message, f"timed by the server's clock: {job.timed_by_clock}")))
        if job.timing()["baseline"] == "compile":
            if "compile_ms" not in reference:
                flags.append("compile_baseline_unavailable")
            else:
                metrics["compile_ms"] = reference["compile_ms"]
                metrics["speedup_vs_compile"] = timing_plan.speedup_vs_compile(
                    reference, cand_ms, within_noise)
        self._decide(job, {"status": "pass", "metrics": metrics, "flags": flags, "message": message},
                     stop=False)

    # ---- the candidate's failures ----

    @staticmethod
    def _candidate_failure(report, language):
        """The verdict for what the candidate's code raised (report: errors.report data;
        `language`: the request's, which the candidate does not choose)."""
        if not isinstance(report, dict):
            report = {}
        # Every field is checked for its type before use: a list where a name belongs
        # would raise here, in the server's loop.
        types = report.get("types") if isinstance(report.get("types"), list) else []
        data = {"types": [t for t in types if isinstance(t, str)][:64],
                "text": report["text"] if isinstance(report.get("text"), str) else "",
                "where": report["where"] if isinstance(report.get("where"), str) else ""}
        stage = report["stage"] if isinstance(report.get("stage"), str) else None
        trial = report.get("trial")
        label = {"import": "candidate import", "init": "candidate init",
                 "timing": "candidate timing"}.get(stage)
        if label is None:
            label = (f"candidate forward (trial {trial + 1})" if isinstance(trial, int)
                     and not isinstance(trial, bool) else "candidate forward")
        error_class = errors.classify(data, protocol.INIT_ERROR if stage == "init"
                                      else protocol.RUNTIME_ERROR)
        message = f"{label}: {errors.describe(data)}"
        if error_class == protocol.COMPILE_ERROR:
            missing = errors.missing_toolchain_header(data["text"])
            # The child's word is not taken for it: the header must really be missing here,
            # and be one that a candidate of its language builds against (any candidate
            # can raise a text naming a header the machine lacks).
            if missing is not None and missing[0] in errors.LANGUAGE_HEADERS[language] \
                    and not toolchain.header_available(missing[0]):
                return error(protocol.HOST_ERROR,
                             f"the candidate's build needs {missing[0]}, which this machine "
                             f"lacks: install {missing[1]} ({label}: {errors.describe(data)})")
        result = fail(error_class, message)
        if error_class == protocol.OUT_OF_MEMORY:
            result["flags"] = ["out_of_memory"]
        return result

    def _decide(self, job, result, stop=True):
        """Records `job`'s verdict; it is sent once its candidate child is gone (at once
        when it has none). `stop` kills the child (a failure: nothing more is wanted from
        it); else the child is told it is done and exits by itself."""
        if job.finished or job.decided is not None:
            return
        if job.proc is None:
            self._finish(job, result)
            return
        job.decided = result
        self.turns.forget(job)
        self._continue(job.proc)
        if stop:
            kill_group(job.proc.pid)
        else:
            job.proc.close_commands()

    def _candidate_done(self, proc, status):
        self.turns.gone(proc)  # whatever it was doing is over
        job = proc.owner
        if job is None:  # a standby that died before it got a job (its log says why)
            return
        if job.decided is not None:
            self._finish(job, job.decided)
            return
        if not job.marker:
            why = job.harness_failed or death_text(proc, status, job.request["limits"], "")
            result = error(protocol.HARNESS_ERROR,
                           f"the candidate's child failed before it ran any candidate code: {why}")
            if _out_of_device_memory(job.harness_failed):
                # Its buffers did not fit beside the jobs sharing the device (seen: a
                # KernelBench pooling task among 250 on one H200): flagged, so that kforge
                # runs it again with the device to itself before any verdict stands.
                result["flags"] = ["out_of_memory"]
            self._finish(job, result)
            return
        if job.loop is not None:
            where = " during candidate timing"
        elif job.ready and job.trials and job.next_trial < len(job.trials):
            where = f" during candidate forward (trial {job.next_trial + 1})"
        else:
            where = " during candidate import or init" if not job.ready else " during candidate forward"
        self._finish(job, death_verdict(proc, status, job.request["limits"], where))

    # ---- device memory, watched from outside ----

    def _watch_memory(self):
        """Stops a candidate whose processes hold more device memory than the share it was
        admitted with (limits.device_memory_mb), as the driver reports it per process:
        torch's allocator limit lives in the candidate's own process, native code can
        allocate past it, and a neighbour would pay."""
        if self.memory_watch is None or time.monotonic() < self.next_watch:
            return
        self.next_watch = time.monotonic() + MEMORY_WATCH_S
        usage = self.memory_watch.usage_by_pid()
        if usage is None:
            return
        for job in list(self.jobs):
            share = job.request["limits"].get("device_memory_mb")
            if job.proc is None or not job.marker or job.decided is not None or not share:
                continue
            held = sum(usage.get(pid, 0) for pid in [job.proc.pid] + descendants(job.proc.pid))
            # Its arena is the task host's memory to the driver, and the child's to use.
            verdict = memory.over_share(held / (1 << 20) + job.arena_mb, share)
            if verdict is not None:
                self._decide(job, verdict)

    # ---- children ----

    def _child_channels(self, commands, fd_socket):
        """A new child's directory, log, result channel (a pipe, or a socketpair when the
        child sends descriptors) and command channel (a pipe, or a socketpair when
        descriptors go to the child): the parent's ends first in each pair."""
        import socket as sockets
        workdir = tempfile.mkdtemp(prefix="kforge-", dir=self.work_root)
        log_fd = os.open(os.path.join(workdir, "log.txt"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        if fd_socket:
            ours, theirs = sockets.socketpair(sockets.AF_UNIX, sockets.SOCK_STREAM)
            result = (ours.detach(), theirs.detach())
        else:
            result = os.pipe()
        command = (None, None)
        if commands:
            ours, theirs = sockets.socketpair(sockets.AF_UNIX, sockets.SOCK_STREAM)
            # The child's end may write: nobody reads it (the server's end stops reading).
            ours.shutdown(sockets.SHUT_RD)
            command = (theirs.detach(), ours.detach())
        return workdir, log_fd, result, command

    def _register(self, role, pid, workdir, read_fd, command_fd, fd_socket):
        set_nonblocking(read_fd)
        proc = Proc(role, pid, workdir, read_fd, command_fd, fd_socket)
        self.procs[pid] = proc
        self.selector.register(read_fd, selectors.EVENT_READ, proc)
        return proc

    def fork_child(self, role, body, commands=False, fd_socket=False):
        """A new child of `role` forked from the server, running body(pipes) with its own
        directory, log and channels; returns its Proc."""
        workdir, log_fd, (result_r, result_w), (command_r, command_w) = self._child_channels(
            commands, fd_socket)
        sys.stdout.flush()
        sys.stderr.flush()
        server_pid = os.getpid()
        pid = os.fork()
        if pid == 0:  # never returns
            self._become_child(server_pid, log_fd, [result_r, command_w], body,
                               {"workdir": workdir, "result_w": result_w, "command_r": command_r})
        for fd in (result_w, log_fd, command_r):
            if fd is not None:
                os.close(fd)
        return self._register(role, pid, workdir, result_r, command_w, fd_socket)

    def _become_child(self, server_pid, log_fd, own_parent_fds, body, pipes):
        """In the forked process: leave the server's session, signals and descriptors
        behind, then run `body`."""
        try:
            os.setsid()
            from kforge_harness.sandbox import isolation
            isolation.die_with_parent(server_pid)
            signal.set_wakeup_fd(-1)
            for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, signal.SIG_DFL)
            parent_fds = own_parent_fds + [self.wake_r, self.wake_w, self.trace.fileno()]
            if self.zygote is not None:
                parent_fds.append(self.zygote.socket.fileno())
            for proc in self.procs.values():
                parent_fds += proc.parent_fds()
            for fd in parent_fds:
                if fd is not None:
                    os.close(fd)
            devnull = os.open(os.devnull, os.O_RDONLY)
            os.dup2(devnull, 0)
            os.dup2(log_fd, 1)
            os.dup2(log_fd, 2)
            os.close(devnull)
            os.close(log_fd)
            body(pipes)
        except BaseException:  # noqa: BLE001 - must never fall back into the server loop
            traceback.print_exc()
        finally:
            os._exit(0)

    def _read(self, proc):
        try:
            data = proc.read()
        except OSError:
            data = b""
        if data is None:
            return
        if not data:  # EOF: everything holding the write end is gone; the reap follows
            self._close_read(proc)
            return
        self._take(proc, data)

    def _take(self, proc, data):
        if proc.flooded:
            return
        proc.received += len(data)
        if proc.role == "candidate" and proc.received > MAX_CANDIDATE_BYTES:
            self._flood(proc, f"more than {MAX_CANDIDATE_BYTES} bytes")
            return
        proc.buffer += data
        if b"\n" in data:
            *lines, rest = bytes(proc.buffer).split(b"\n")
            proc.buffer = bytearray(rest)
            for line in lines:
                proc.lines += 1
                if proc.role == "candidate" and proc.lines > proc.commands + CANDIDATE_LINES_BEYOND_COMMANDS:
                    self._flood(proc, f"more than {proc.commands + CANDIDATE_LINES_BEYOND_COMMANDS} lines")
                    return
                self._message(proc, line)
        if len(proc.buffer) > MAX_LINE_BYTES:
            self._flood(proc, f"a line of more than {MAX_LINE_BYTES} bytes")

    def _flood(self, proc, what):
        proc.flooded = True
        proc.buffer = bytearray()
        job = proc.owner
        if proc.role == "candidate" and job is not None and job.marker:
            self._decide(job, fail(protocol.RUNTIME_ERROR,
                                   f"the candidate's process wrote {what} to the harness's pipe"))
        else:
            kill_group(proc.pid)

    def _message(self, proc, line):
        message = reporter.decode(line)
        if message is None:
            return
        if proc.role == "candidate":
            self._candidate_message(proc, message)
        elif proc.role == "host":
            self._host_message(proc, message)
        elif "result" in message and proc.owner is not None and isinstance(message["result"], dict):
            proc.owner.check_result = message["result"]

    def _close_read(self, proc):
        if proc.read_fd is not None:
            self.selector.unregister(proc.read_fd)
            proc.close_read()

    @staticmethod
    def _exited(pid):
        # WNOWAIT: look without reaping, so the group id stays valid for the kill.
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None

    def _reap(self):
        for pid, proc in list(self.procs.items()):
            if not self._exited(pid):
                continue
            kill_group(pid)
            _, status = os.waitpid(pid, 0)
            del self.procs[pid]
            if proc.cgroup is not None:
                proc.cgroup.remove()
            self._drain_pipe(proc)
            self._close_read(proc)
            proc.close_commands()
            if proc is self.standby:
                self.standby = None
            try:
                self._exit_handlers[proc.role](self, proc, status)
            finally:
                shutil.rmtree(proc.workdir, ignore_errors=True)
        self._reap_orphans()
        if self.freezer is not None:
            self.freezer.sweep()

    def _reap_orphans(self):
        """Processes re-parented to the server (it is a subreaper for the zygote's
        children) that are none of its children: an orphan of a trusted child."""
        while True:
            try:
                info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                return
            if info is None or info.si_pid in self.procs:
                return
            if self.zygote is not None and info.si_pid == self.zygote.pid:
                os.waitpid(info.si_pid, 0)
                print("kforge_harness: the zygote died; candidates now fork from the server's "
                      "spawn path", file=sys.stderr)
                self.zygote = None
                self.mode = "spawn"
                sandbox.save_view(os.path.join(self.root, SANDBOX_VIEW_FILE))
                continue
            os.waitpid(info.si_pid, 0)

    def _drain_pipe(self, proc):
        """The child has exited: what it wrote is all in the pipe now."""
        while proc.read_fd is not None:
            try:
                data = proc.read()
            except OSError:
                return
            if not data:
                return
            self._take(proc, data)

    def _check_done(self, proc, status):
        job = proc.owner
        result = getattr(job, "check_result", None)
        if result is not None:
            self._finish(job, result)
        else:
            self._finish(job, error(protocol.HARNESS_ERROR, "the checker died: " +
                                    death_text(proc, status, job.request["limits"], "")))

    _exit_handlers = {"candidate": _candidate_done, "host": _host_death, "check": _check_done}

    def _enforce_deadlines(self):
        now = time.monotonic()
        for proc in self.procs.values():
            if not proc.timed_out and now >= proc.deadline:
                proc.timed_out = True
                self._continue(proc)
                kill_group(proc.pid)



# How long the signal freeze waits for a tree to hold stopped: a stop lands only when its
# process next runs, and on a loaded machine (a 2-core CI box at load 8-12) an honest
# tree took longer than 0.5 s.
SIGNAL_FREEZE_PATIENCE_S = 2.5

# The longest the server's loop waits on one freeze at a time (then serves the others):
# a freeze lands within microseconds unless a task is held in the kernel.
FREEZE_STEP_S = 0.002


# glibc's malloc arenas a process may create: by default 8 per core, each reserving
# 64 MB of the data segment, which the children's memory limit (RLIMIT_DATA on
# accelerators) counts. On a 32-core host, torch's threads in a reference of a
# 32768 x 32768 Linear took enough arenas to fail an allocation (SIGSEGV, issue 20).
MALLOC_ARENAS = 8


def _cap_malloc_arenas():
    """Caps the arenas of this process and of everything forked from it (spawned
    interpreters read MALLOC_ARENA_MAX)."""
    import ctypes
    os.environ["MALLOC_ARENA_MAX"] = str(MALLOC_ARENAS)
    try:
        ctypes.CDLL(None).mallopt(-8, MALLOC_ARENAS)  # M_ARENA_MAX
    except (OSError, AttributeError):  # not glibc: its own allocator's rules hold
        pass


def _guard_violations(message):
    """What the child's runtime guards refused (anticheat/guards.py), as text."""
    refused = message.get("guard")
    if not isinstance(refused, list):
        return ""
    return "; ".join(str(item)[:300] for item in refused[:5])


def _out_of_device_memory(harness_failed):
    """Whether the harness's own set-up of a child (trusted text: no candidate code had
    run) failed for want of memory, as errors.classify tells it from a text."""
    return isinstance(harness_failed, str) and \
        errors.classify({"text": harness_failed}, None) == protocol.OUT_OF_MEMORY


def _mismatch(message):
    """(error class, message) of a child's report that its outputs did not fit the
    reference's layout, or None."""
    mismatch = message.get("mismatch")
    if not isinstance(mismatch, dict):
        return None
    error_class = mismatch.get("error_class")
    if error_class not in (protocol.SHAPE_MISMATCH, protocol.DTYPE_MISMATCH, protocol.CHEAT_DETECTED):
        error_class = protocol.SHAPE_MISMATCH
    text = mismatch.get("message") if isinstance(mismatch.get("message"), str) else ""
    return error_class, text[:protocol.MAX_MESSAGE_CHARS]


def _copy_artifact(artifact, workdir):
    """The C++ stage's library (and the source kept beside it, which kforge_cpp checks)
    copied into the candidate's directory, the only place its sandbox shows; None when
    there is none (the candidate then compiles its source itself)."""
    if not artifact:
        return None
    copy = os.path.join(workdir, "kforge_artifact" + os.path.splitext(artifact)[1])
    try:
        shutil.copyfile(artifact, copy)
        shutil.copyfile(os.path.splitext(artifact)[0] + ".cpp", os.path.splitext(copy)[0] + ".cpp")
    except OSError:
        return None
    return copy


def _remove_abandoned(scratch):
    """Removes the private directories of servers that died without cleaning up (killed
    with their run). A directory whose lock file can be locked has no live server (one
    just made may not hold it yet: those younger than a minute are left alone)."""
    import fcntl
    for path in glob.glob(os.path.join(scratch, "kforge-harness-*")):
        try:
            if time.time() - os.stat(path).st_mtime < 60:
                continue
            fd = os.open(os.path.join(path, LOCK_FILE), os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            continue  # not a server's directory, or not ours to judge
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            continue  # a live server holds it
        finally:
            os.close(fd)
        shutil.rmtree(path, ignore_errors=True)
