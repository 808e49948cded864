"""The server: reads requests (JSON lines on stdin), runs them through its children,
writes responses (JSON lines on stdout) in completion order. PROTOCOL.md is the contract;
README.md ("Architecture") explains the parties.

The server is trusted and never touches the device (a CUDA context does not survive
fork, and every child must be able to create its own). Its children:
- the reference worker (reference.py, trusted): self-tests a task and computes its
  reference outputs into the reference store (store.py), once per run, and times it;
- the candidate child (candidate.py, untrusted): runs ModelNew trial by trial, on the
  server's command, and hands over outputs, timings and its log; in fork mode one is
  forked ahead and waits on standby with the device initialised; in spawn mode each is a
  fresh interpreter;
- the judges (judge.py, trusted, long-lived): compare a trial's handed-over outputs
  with the stored reference outputs;
- the checker (child.check_main): the L1 static check, which parses and never runs code.

Who is blamed is decided here, from what the server itself saw: a reference that fails
is the task's (task_error); a candidate child that fails before it reports the marker
{"candidate_code": "start"} is the harness's; after it, everything that goes wrong in
that child is the candidate's, whatever the child says.

One thread, one select loop over stdin, the children's pipes and a self-pipe that SIGCHLD
writes to; wall-clock deadlines are the select timeouts."""

import collections
import fcntl
import glob
import json
import math
import os
import selectors
import shutil
import signal
import stat
import sys
import tempfile
import time
import traceback

from kforge_harness import HARNESS_DIR
from kforge_harness.server import child, store
from kforge_harness.judge import compare
from kforge_harness.protocol import errors, reporter
from kforge_harness import protocol, sandbox
from kforge_harness.tasks import runner
from kforge_harness.sandbox import threads
from kforge_harness.timing import timing_plan
from kforge_harness.devices import toolchain
from kforge_harness.judge.outputs import SCRATCH_FULL, leaf_file
from kforge_harness.reference.reference import VARIATIONS, input_key
from kforge_harness.server.seeds import RequestSeeds
from kforge_harness.tasks.tasks import read_task_source


# A child's line longer than this is a flood, not a report.
MAX_LINE_BYTES = 8 << 20
# What a candidate's child may write to its pipe: a line per command the server sent it
# (trials, the timed loops' exchanges) and a few more (the marker, ready, flags...), 64 MB
# in all. Past either it is a flood, however it
# is cut into lines: every line costs the server's loop a decode, and that loop serves
# every other request too.
CANDIDATE_LINES_BEYOND_COMMANDS = 32
MAX_CANDIDATE_BYTES = 64 << 20
# Threads a judge compares one output with, each on a slice. A 1 GB float32 output from
# files on the H100 host (16 cores): 3.6 s with one, 2.4 s with two, 1.9 s with four,
# 3.1 s with eight (torch's own threads on one slice instead: 5.0, 3.2, 3.4 s with 1, 2, 4).
JUDGE_WORKERS = 4

# Judges that compare large outputs on the server's accelerator (none on the CPU): two,
# so that one reads its files while the other waits for its next trial. Each holds a
# CUDA context and its chunks' buffers (compare.DEVICE_CHUNK_ELEMENTS per worker) for its
# life; the device memory reported for admission is the device's less JUDGE_DEVICE_MB for
# each, so admitted jobs never count on it. Measured on the H100 host (torch 2.11,
# bench/judge_device.py, 6.4 GB output): 816 MiB held with one worker, 1,376 MiB with
# four (JUDGE_WORKERS).
DEVICE_JUDGES = 2
JUDGE_DEVICE_MB = 1536

# How long a judge may take for one trial (a multi-GB output compares in seconds).
JUDGE_TIMEOUT_S = 900.0
JOB_FILE = "job.json"
# Candidate outputs waiting on disk for the judge, at most (at least one trial's): trials
# are commanded ahead while their outputs stay under this.
WINDOW_BYTES = 256 << 20
# Scratch space kept free beside the outputs a candidate's trials write: 1 GiB, or a
# twentieth of a smaller filesystem.
SCRATCH_RESERVE = 1 << 30
# The file a server holds locked for its life in its private directory: a directory whose
# lock can be taken belongs to a server that is gone (killed before it could clean up).
LOCK_FILE = "server.lock"
SANDBOX_VIEW_FILE = "sandbox-view.json"  # spawn mode: sandbox_fs.save_view() of the server
SPEEDUP_FLAG_LIMIT = 10.0


class Proc:
    """A child process of the server: its role, its own directory (log.txt), the pipe it
    writes to (`read_fd`) and, for the candidate child and the judge, the pipe it reads
    commands from (`command_fd`)."""

    def __init__(self, role, pid, workdir, read_fd, command_fd=None):
        self.role = role  # "candidate", "reference", "judge" or "check"
        self.pid = pid
        self.workdir = workdir
        self.read_fd = read_fd
        self.commands = 0  # command lines sent: each may get one line back
        self.command_fd = command_fd
        self.buffer = bytearray()
        self.started = time.monotonic()
        self.deadline = math.inf
        self.timed_out = False
        self.flooded = False
        self.received = 0  # bytes read from `read_fd`
        self.lines = 0  # lines read from `read_fd`
        self.owner = None  # the Job (or, for a judge, the judge slot's current job)
        self.on_device = False  # a device judge (JudgePool)
        self.result = None  # a trusted child's {"result"}

    def parent_fds(self):
        return [fd for fd in (self.read_fd, self.command_fd) if fd is not None]

    def send(self, obj):
        """One command line; False when the child is gone."""
        if self.command_fd is None:
            return False
        data = protocol.encode(obj).encode("utf-8")
        try:
            while data:
                data = data[os.write(self.command_fd, data):]
        except OSError:
            return False
        self.commands += 1
        return True

    def close_commands(self):
        if self.command_fd is not None:
            os.close(self.command_fd)
            self.command_fd = None


class Job:
    def __init__(self, request):
        self.request = request
        self.id = request["id"]
        self.action = request["action"]
        self.started = time.monotonic()
        self.finished = False
        self.proc = None
        self.flags = []
        # run / compile
        self.source = None
        self.entry = None
        self.reference_computed = False
        self.reference_timed = False  # this job's own worker measured the reference's timing
        self.reference_seconds = 0.0
        self.marker = False  # the candidate child reported {"candidate_code": "start"}
        self.harness_failed = None
        self.ready = False
        self.commanded = 0  # trials the candidate child was told to run
        self.reports = collections.deque()  # its trial reports not judged yet
        self.next_trial = 0  # the next trial to judge
        self.judging = False
        self.judge_started = 0.0
        self.awaiting_timing = False
        self.thread_baseline = None  # the child's process tree's threads at the marker
        self.workdir_bytes = 0  # what the child's directory held at the marker (weights...)
        self.had_company = False  # another job of this server ran while this one did
        self.loop = None  # the timed loop running (timing_plan.Loop)
        self.first_loop = None  # the timing loop, once a confirmation loop follows it
        self.confirmations = 0  # confirmation loops run (a second one before a rejection)
        self.spot_seeds = []  # input seeds of the timed calls checked (the task's, per run)
        self.timing_started = 0.0  # when the first timed loop was commanded
        self.trial_metrics = []  # the judge's metrics of each passed trial
        self.trials = []  # (input seed, transform or None) of each trial, once the plan is known
        self.decided = None  # the verdict, once known (sent when the child is gone)
        task = request.get("task") or {}
        self.seeds = RequestSeeds(request["options"]["seed"], task.get("id") or os.path.splitext(
            os.path.basename(task.get("path") or ""))[0])

    @property
    def weight_seed(self):
        """The model seed: both constructors run right after seeding with it; the stored
        outputs and weights are keyed by it."""
        return self.seeds.model

    def input_seeds(self):
        """The input seeds of the request's own trials (not the varied ones)."""
        count = self.request["options"]["trials"] if self.action == "run" else 1
        return self.seeds.inputs(count)

    def plan_key(self):
        """What the varied trials of a near-constant reference depend on."""
        return json.dumps([self.weight_seed, self.request["options"]["rule"], self.input_seeds()],
                          sort_keys=True)

    def timing(self):
        timing = self.request["options"]["timing"]
        return timing if self.action == "run" and timing["enabled"] else None

    def timing_seed(self):
        return self.seeds.timing


def _set_nonblocking(fd):
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)


def _kill_group(pid):
    # The child leads its own process group (setsid), so this also ends what it started.
    for kill, target in ((os.killpg, pid), (os.kill, pid)):
        try:
            kill(target, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


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


def _write_json(path, obj):
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(obj, handle)


class Server:
    def __init__(self, device, mode, max_children, scratch, store_bytes):
        self.device = device
        # Measured after every import, so that limits.memory_mb is on top of them.
        from kforge_harness.sandbox import isolation
        self.memory_base = isolation.memory_baseline(device)
        self.mode = mode
        self.max_children = max(1, max_children)
        # The server's private directory (mode 0700): the reference store and the
        # children's own directories.
        _remove_abandoned(scratch or tempfile.gettempdir())
        self.root = tempfile.mkdtemp(prefix="kforge-harness-", dir=scratch)
        self.lock_fd = os.open(os.path.join(self.root, LOCK_FILE), os.O_CREAT | os.O_RDONLY | os.O_CLOEXEC, 0o600)
        fcntl.flock(self.lock_fd, fcntl.LOCK_EX)
        self.scratch_waiting = []  # jobs whose candidate waits for scratch space
        self.finished_count = 0
        self.work_root = os.path.join(self.root, "work")
        os.makedirs(self.work_root, mode=0o700)
        self.store = store.ReferenceStore(os.path.join(self.root, "store"), store_bytes)
        if mode == "spawn":  # what each spawned child's sandbox shows (_exec_candidate)
            sandbox.save_view(os.path.join(self.root, SANDBOX_VIEW_FILE))
        self.spot_seeds = {}  # (entry key, weight seed, count) -> seeds (_spot_seeds)
        self.queue = []
        self.jobs = set()  # jobs holding a slot
        self.procs = {}  # pid -> Proc
        self.standby = None  # fork mode: a candidate child waiting for its job
        # Each judge compares with up to JUDGE_WORKERS threads (at most half the cores):
        # most of the time one or two judge at once, and when more do, the kernel shares
        # the cores among them.
        self.judges = JudgePool(self, self.max_children,
                                max(1, min(JUDGE_WORKERS, (os.cpu_count() or 1) // 2)),
                                DEVICE_JUDGES if device.is_accelerator else 0)
        self.stdin_open = True
        self.stdin_buffer = bytearray()
        # poll, not epoll: epoll refuses a regular file as stdin (requests from a file).
        self.selector = selectors.PollSelector()
        self.wake_r = self.wake_w = None

    # ---- main loop ----

    def serve(self):
        self.wake_r, self.wake_w = os.pipe()
        _set_nonblocking(self.wake_r)
        _set_nonblocking(self.wake_w)
        signal.set_wakeup_fd(self.wake_w, warn_on_full_buffer=False)
        # A Python-level handler is what makes SIGCHLD reach the wakeup fd.
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
        self.selector.register(0, selectors.EVENT_READ, "stdin")
        self.selector.register(self.wake_r, selectors.EVENT_READ, "wake")
        self._refill_standby()
        seen_finished = 0
        try:
            while True:
                if self.scratch_waiting and self.finished_count != seen_finished:
                    self._retry_scratch_waiting()
                seen_finished = self.finished_count
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
        finally:
            for proc in list(self.procs.values()):
                _kill_group(proc.pid)
                os.waitpid(proc.pid, 0)
            self.store.close()
            shutil.rmtree(self.root, ignore_errors=True)

    def _select_timeout(self):
        # A killed child's SIGCHLD wakes the loop: only live deadlines bound the wait.
        deadlines = [p.deadline for p in self.procs.values() if not p.timed_out]
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
        """Answers `job` with `result` (a verdict dict) and frees its slot."""
        if job.finished:
            return
        job.finished = True
        self.finished_count += 1
        self.jobs.discard(job)
        if job.entry is not None:
            if job.entry.worker is job:
                job.entry.worker = None
            self.store.unpin(job.entry)
        log_tail = _tail(os.path.join(job.proc.workdir, "log.txt")) if job.proc is not None else ""
        metrics = dict(result.get("metrics") or {})
        metrics["child_seconds"] = time.monotonic() - job.started
        flags = list(job.flags) + [f for f in result.get("flags") or [] if f not in job.flags]
        task_sizes = None
        if job.entry is not None and job.entry.facts is not None:
            facts = job.entry.facts
            metrics.update(task_peak_mb=facts["peak_mb"],
                           device_memory_mb=facts["device_memory_mb"] - self.judges.device_mb())
            task_sizes = facts["task_sizes"]
            flags += [f for f in facts.get("flags", []) if f not in flags]
        if job.action in ("run", "compile"):  # the actions that use the task's reference
            metrics["reference_computed"] = 1 if job.reference_computed else 0
            if job.reference_computed:
                metrics["reference_seconds"] = job.reference_seconds
            elif job.entry is not None and job.entry.facts is not None:
                flags.append("reference_from_store")
        self._respond(protocol.response(
            job.id, result.get("status", "error"), result.get("error_class", ""),
            result.get("message", ""), log_tail, result.get("findings"),
            result.get("extracted"), metrics, flags, task_sizes))

    # ---- jobs ----

    def _start(self, job):
        # Jobs that write to the scratch at the same time may fill it for each other.
        for other in self.jobs:
            other.had_company = True
        job.had_company = bool(self.jobs)
        self.jobs.add(job)
        if job.action == "check":
            try:
                proc = self.fork_child("check", lambda p: child.check_main(
                    job.request, p["result_w"], self.device, self.memory_base))
            except OSError as exc:
                self._finish(job, _error(protocol.HARNESS_ERROR, f"cannot start a child process: {exc}"))
                return
            proc.owner, job.proc = job, proc
            return
        if job.request["candidate"]["language"] == "triton" and not toolchain.has_triton():
            self._finish(job, _error(protocol.HOST_ERROR,
                                     f"triton is not importable by {sys.executable}: install "
                                     "triton (triton-ascend on an NPU host) to evaluate triton "
                                     "candidates"))
            return
        try:
            job.source = read_task_source(job.request["task"]["path"])
        except protocol.Verdict as verdict:
            self._finish(job, protocol.verdict_result(verdict))
            return
        key = store.entry_key(job.request["task"], job.source, self.device.name,
                              job.request["options"]["inputs_on_device"])
        job.entry = self.store.entry(key)
        self.store.pin(job.entry)
        self._reference_step(job)

    def _reference_step(self, job):
        """Makes sure the store has what `job` needs of its task's reference (the
        self-test's facts, the outputs for its seeds, a fresh enough timing), starting a
        reference worker or waiting for the one that runs; then starts its candidate."""
        entry = job.entry
        if entry.failure is not None:
            self._finish(job, entry.failure)
            return
        if entry.worker is not None and entry.worker is not job:
            entry.waiters.append(job)
            return
        timing = job.timing()
        if timing is not None and not job.spot_seeds:
            job.spot_seeds = self._spot_seeds(job)
        missing = entry.missing(job.weight_seed, job.input_seeds() + job.spot_seeds)
        stale_timing = timing is not None and not job.reference_timed and entry.stored_timing(
            self._timing_key(job), float(timing["reference_max_age_s"])) is None
        no_weights = str(job.weight_seed) not in entry.weights
        no_plan = job.action == "run" and job.plan_key() not in entry.plans
        if entry.facts is None or missing or stale_timing or no_weights or no_plan:
            self._start_reference(job, missing, timing if stale_timing else None, no_weights, no_plan)
            return
        self._start_candidate(job)

    def _spot_seeds(self, job):
        """The input seeds of the timed calls checked against the reference: drawn once
        per task, weight seed and count in this run (their outputs are computed once),
        from the server's secret randomness, never from the request. The first half
        serves the timing loop, the second the confirmation loop. None where the task's
        format says its timed calls cannot be checked (spot_checked)."""
        if not spot_checked(job.request["task"]["format"]):
            return []
        count = timing_plan.spot_seed_count(job.timing())
        key = (job.entry.key, job.weight_seed, count)
        if key not in self.spot_seeds:
            self.spot_seeds[key] = [timing_plan.draw_seed() for _ in range(2 * count)]
        return self.spot_seeds[key]

    def _timing_key(self, job):
        return store.timing_key(job.weight_seed, job.timing_seed(), job.timing())

    def _start_reference(self, job, input_seeds, timing, write_weights, plan):
        request = job.request
        if plan:  # the worker decides whether the trials need varied inputs
            plan = {"rule": request["options"]["rule"],
                    "stored_seeds": [s for s in job.input_seeds() if s not in input_seeds],
                    "varied_seeds": [job.seeds.varied(k) for k in range(len(VARIATIONS))]}
        worker_job = {
            "task": dict(request["task"], source=job.source),
            "options": {"seed": job.weight_seed,
                        "inputs_on_device": request["options"]["inputs_on_device"]},
            "limits": request["limits"], "input_seeds": input_seeds,
            "weights_seed": job.seeds.weights, "write_weights": write_weights,
            "plan": plan or None,
            "check_determinism": job.entry.facts is None, "timing": timing,
            "timing_seed": job.timing_seed(), "entry_dir": job.entry.dir}
        try:
            proc = self.fork_child("reference", lambda p: child.reference_main(
                worker_job, p["result_w"], self.device, self.memory_base))
        except OSError as exc:
            self._finish(job, _error(protocol.HARNESS_ERROR, f"cannot start the reference worker: {exc}"))
            return
        proc.owner, job.proc = job, proc
        proc.deadline = proc.started + float(request["limits"]["timeout_s"])
        job.entry.worker = job
        job.reference_computed = True
        job.reference_timed = timing is not None

    def _reference_done(self, proc, status):
        job = proc.owner
        entry = job.entry
        waiters, entry.waiters = entry.waiters, []
        entry.worker = None
        job.reference_seconds += time.monotonic() - proc.started
        result = proc.result if proc.result is not None else self._reference_death(proc, status)
        if result.get("status") == "pass":
            if job.timing() is not None:
                result["timing_key"] = self._timing_key(job)
            if result.get("varied") is not None:
                result["plan_key"] = job.plan_key()
            if not self.store.record(entry, result, job.weight_seed):
                for each in [job] + waiters:
                    each.flags.append("reference_not_stored")
            for each in [job] + waiters:
                if not each.finished:
                    self._reference_step(each)
            return
        self.store.discard_unrecorded(entry)
        lasting = (result.get("error_class") == protocol.TASK_ERROR and proc.result is not None
                   and "out_of_memory" not in (result.get("flags") or []))
        if lasting:  # the task is broken at these sizes: every later request is told at once
            entry.failure = result
        for each in [job] + waiters:
            self._finish(each, result)

    def _reference_death(self, proc, status):
        limits = proc.owner.request["limits"]
        if proc.timed_out:
            return _error(protocol.TASK_ERROR,
                          f"the task's reference did not finish within the wall-clock limit of "
                          f"{limits['timeout_s']:g} s; shrink it (task.sizes, size_scale, "
                          "fit_memory_mb) or raise timeout_s")
        flags = []
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            message = f"the task's reference was killed by {_signal_name(sig)} ({signal.strsignal(sig)})"
            if sig == signal.SIGKILL:
                message += ": not by the harness; often the kernel's OOM killer"
                flags.append("out_of_memory")
            elif sig == signal.SIGXCPU:
                message = f"the task's reference hit the CPU-time limit of {limits['cpu_s']} s"
        else:
            message = (f"the task's code ended the reference worker (exit status "
                       f"{os.WEXITSTATUS(status)}) before it reported")
        result = _error(protocol.TASK_ERROR, message)
        result["flags"] = flags
        return result

    # ---- the candidate child ----

    def _candidate_job(self, job, workdir):
        request = job.request
        facts = job.entry.facts
        task = dict(request["task"], source=job.source, modules=facts.get("task_modules", []))
        if facts.get("fitted"):  # run at the sizes the fitter chose for the reference
            task.update(sizes=facts["task_sizes"], size_scale=1.0, fit_memory_mb=0)
        first = job.entry.outputs.get(f"{job.weight_seed}-{input_key(*job.trials[0])}") or {}
        sizes = [leaf["nbytes"] for leaf in first.get("leaves", []) if leaf.get("kind") == "tensor"]
        return {"action": job.action, "task": task,
                "candidate": dict(request["candidate"],
                                  artifact=_copy_artifact(request["candidate"].get("artifact"), workdir)),
                "options": {"seed": job.weight_seed,
                            "inputs_on_device": request["options"]["inputs_on_device"]},
                "limits": request["limits"],
                "input_seeds": [seed for seed, _ in job.trials],
                "input_transforms": [transform for _, transform in job.trials],
                "weights": self._hand_weights(job, workdir),
                "poison_bytes": sizes,
                # Each output goes to a file of its own: the largest the reference has, and
                # never less than the sandbox's default, is what the child may write.
                "file_size_mb": max(sandbox.DEFAULT_LIMITS["file_size_mb"],
                                    max(sizes, default=0) // (1 << 20) + 1)}

    def _trials_ahead(self, job):
        """How many trials the candidate computes ahead of the judge (their outputs, at
        most WINDOW_BYTES, wait on the scratch filesystem)."""
        first = job.entry.outputs[f"{job.weight_seed}-{input_key(*job.trials[0])}"]
        return min(max(1, WINDOW_BYTES // max(1, first["bytes"])), len(job.trials)), first["bytes"]

    def _scratch_free(self):
        """Bytes the scratch filesystem can still give, less the reserve kept free."""
        info = os.statvfs(self.root)
        reserve = min(SCRATCH_RESERVE, info.f_blocks * info.f_frsize // 20)
        return info.f_bavail * info.f_frsize - reserve

    def _scratch_admits(self, job):
        """Whether the scratch filesystem has room for the outputs `job`'s candidate keeps
        there at once. Without room it waits while other jobs run (they free theirs when
        they end); with none running, the machine cannot evaluate the task: host_error."""
        ahead, trial_bytes = self._trials_ahead(job)
        need = ahead * trial_bytes
        free = self._scratch_free()
        if need <= free:
            return True
        if any(other is not job and other not in self.scratch_waiting for other in self.jobs):
            self.scratch_waiting.append(job)
            return False
        self._finish(job, protocol.verdict_result(protocol.host_error(
            f"the harness's scratch directory {self.root} has {max(0, free) / (1 << 20):.0f} MiB free "
            f"(beyond a reserve); the candidate's outputs need {need / (1 << 20):.0f} MiB there: "
            "free space, or point TMPDIR at a larger filesystem", flags=[SCRATCH_FULL])))
        return False

    def _retry_scratch_waiting(self):
        waiting, self.scratch_waiting = self.scratch_waiting, []
        for job in waiting:
            if not job.finished:
                self._start_candidate(job)

    def _hand_weights(self, job, workdir):
        """The reference's re-initialised weights, copied into the candidate's directory
        (the only place its sandbox shows; copies, not links, so that a child writing
        into them cannot change what the next candidate gets): {"prefix", "names",
        "leaves"}, which the child loads into ModelNew (runner.load_weights)."""
        weights = job.entry.weights[str(job.weight_seed)]
        for index, leaf in enumerate(weights["leaves"]):
            if leaf.get("kind") == "tensor":
                shutil.copyfile(os.path.join(job.entry.dir, leaf_file(f"w{job.weight_seed}", index)),
                                os.path.join(workdir, leaf_file("weights", index)))
        return {"prefix": "weights", "names": weights["names"], "leaves": weights["leaves"]}

    def _start_candidate(self, job):
        job.trials = [(seed, None) for seed in job.input_seeds()]
        if job.action == "run":
            varied = job.entry.plans[job.plan_key()]
            job.trials += [(seed, (scale, shift)) for seed, scale, shift in varied]
            if varied and "inputs_varied" not in job.flags:
                job.flags.append("inputs_varied")
            if not self._scratch_admits(job):
                return
        network = bool(job.request["limits"]["network"])
        try:
            if self.standby is not None and not network:
                proc, self.standby = self.standby, None
            else:
                proc = self._fork_candidate(network)
            _write_json(os.path.join(proc.workdir, JOB_FILE), self._candidate_job(job, proc.workdir))
        except OSError as exc:  # out of descriptors, processes or scratch space
            self._finish(job, _error(protocol.HARNESS_ERROR, f"cannot start a child process: {exc}"))
            return
        proc.owner, job.proc = job, proc
        proc.started = time.monotonic()
        proc.deadline = proc.started + float(job.request["limits"]["timeout_s"])
        proc.send({"job": JOB_FILE})
        self._refill_standby()

    def _candidate_starts(self, job):
        """The child reported the marker and waits: its threads now are the baseline of
        the thread guard (none of the candidate's code has run); then it may build
        ModelNew, and the first trials are commanded."""
        job.marker = True
        job.workdir_bytes = _tree_bytes(job.proc.workdir)
        job.thread_baseline = threads.tree_threads(job.proc.pid)
        if job.thread_baseline is None and job.timing() is not None:
            job.flags.append("threads_not_counted")
        job.proc.send({"build": True})
        if job.action == "run":
            for _ in range(self._trials_ahead(job)[0]):
                self._command_trial(job)

    @staticmethod
    def _command_trial(job):
        job.proc.send({"go": job.commanded})
        job.commanded += 1

    def _refill_standby(self):
        """Forks the next standby. Only here, at start and after a dispatch: a standby
        that keeps dying is then replaced at most once per request."""
        if self.mode == "fork" and self.standby is None and self.stdin_open:
            try:
                self.standby = self._fork_candidate(False)
            except OSError as exc:  # requests then fork their own children
                print(f"kforge_harness: cannot fork a standby child: {exc}", file=sys.stderr)

    def _fork_candidate(self, network):
        def body(pipes):
            if self.mode == "spawn":
                self._exec_candidate(pipes, network)
            child.candidate_main(pipes["command_r"], pipes["result_w"], self.device,
                                 pipes["workdir"], self.memory_base, self._hidden_paths(),
                                 network)
        return self.fork_child("candidate", body, commands=True)

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
        if job is None or job.decided is not None or job.finished:
            return
        if not job.marker:  # still the harness's own code in that child: trusted
            if isinstance(message.get("harness_flags"), list):
                job.flags += [f for f in message["harness_flags"] if isinstance(f, str)]
            elif isinstance(message.get("harness_failed"), str):
                job.harness_failed = message["harness_failed"]
            elif message.get("candidate_code") == "start":
                self._candidate_starts(job)
            return
        # From here on, what the child says is data about the candidate's run, no more.
        if self._threads_started(job, message):
            return
        if "failed" in message:
            self._decide(job, self._scratch_full(job, message["failed"])
                         or self._candidate_failure(message["failed"],
                                                    job.request["candidate"]["language"]))
        elif message.get("ready") is True:
            job.ready = True
        elif "trial" in message and job.action == "run":
            self._candidate_trial(job, message)
        elif message.get("compiled") is True and job.action == "compile" and job.ready:
            self._decide(job, {"status": "pass"}, stop=False)
        elif job.loop is not None and "pong" in message:
            self._loop_ponged(job, message, now)
        elif job.loop is not None and "called" in message:
            self._loop_called(job, message, now)
        elif job.loop is not None and "prepared" in message:
            self._loop_prepared(job, message)
        elif isinstance(message.get("weights"), dict):
            self._candidate_weights(job, message["weights"])

    @staticmethod
    def _candidate_weights(job, report):
        """What the child says it copied of the reference's weights into ModelNew: data
        for a flag (a parameter that got no copy keeps its default values, and the
        comparison then fails unless the candidate does not use it), never a verdict."""
        missed = report.get("not_copied"), report.get("unused")
        if any(isinstance(names, list) and names for names in missed):
            job.flags.append("weights_not_copied")

    def _candidate_trial(self, job, message):
        expected = job.next_trial + len(job.reports) + (1 if job.judging else 0)
        if message.get("trial") != expected or expected >= job.commanded or job.awaiting_timing:
            self._decide(job, _fail(protocol.RUNTIME_ERROR,
                                    "the candidate's process reported a trial it was not asked for"))
            return
        job.reports.append(message)
        self._judge_next(job)

    def _judge_next(self, job):
        if job.judging or not job.reports:
            return
        message = job.reports.popleft()
        entry = job.entry
        seed, transform = job.trials[job.next_trial]
        prefix = f"{job.weight_seed}-{input_key(seed, transform)}"
        label = f"trial {job.next_trial + 1}"
        if transform is not None:
            label += f" (inputs varied: x*{transform[0]:g}{transform[1]:+g})"
        command = {"label": label, "rule": job.request["options"]["rule"],
                   "reference": dict(entry.outputs[prefix], dir=entry.dir, prefix=prefix),
                   "candidate": {"dir": job.proc.workdir, "prefix": f"out-{job.next_trial}",
                                 "report": message}}
        job.judging = True
        job.judge_started = time.monotonic()
        self.judges.submit(job, command)

    def judged(self, job, result):
        """A judge's result for `job`'s current trial."""
        if job.finished or job.decided is not None:
            return
        job.judging = False
        proc = job.proc
        # The candidate's wall-clock limit does not count the time it waited for the judge.
        proc.deadline += time.monotonic() - job.judge_started
        for path in glob.glob(os.path.join(proc.workdir, f"out-{job.next_trial}-*.bin")):
            os.unlink(path)
        trial = job.next_trial
        metrics = result.get("metrics") or {}
        if result["status"] == "error":
            self._decide(job, result)
            return
        if result["status"] != "pass":
            metrics = dict(metrics, failed_trial=trial + 1)
            self._decide(job, dict(result, metrics=metrics))
            return
        job.trial_metrics.append(metrics)
        job.next_trial += 1
        if job.commanded < len(job.trials):
            self._command_trial(job)
        if job.next_trial < len(job.trials):
            self._judge_next(job)
            return
        if job.timing() is not None:
            job.awaiting_timing = True
            job.timing_started = time.monotonic()
            self._start_loop(job, "timing")
        else:
            self._decide(job, {"status": "pass", "metrics": self._correctness_metrics(job)}, stop=False)

    @staticmethod
    def _correctness_metrics(job):
        """The judge's statistics over the trials: the worst of each (the mean of the
        means), and the number of trials."""
        metrics = compare.combined([m for m in job.trial_metrics if m])
        metrics["trials"] = len(job.trial_metrics)
        return metrics

    # ---- the candidate's timing (timing_plan.py has the exchange) ----

    def _threads_started(self, job, message):
        """Rejects a timed job whose child's process tree runs more threads than at the
        marker (beyond options.timing.max_new_threads): a thread the candidate started
        can work outside the timed calls. Returns True when it rejected."""
        timing = job.timing()
        if timing is None or job.thread_baseline is None:
            return False
        now = threads.tree_threads(job.proc.pid)
        if now is None or now - job.thread_baseline <= int(timing["max_new_threads"]):
            return False
        phase = ("building ModelNew" if message.get("ready") is True
                 else f"trial {message['trial'] + 1}" if isinstance(message.get("trial"), int)
                 else "a timed call" if "called" in message or "prepared" in message
                 else "its code ran")
        self._decide(job, timing_plan.rejection(
            f"the candidate's process runs {now - job.thread_baseline} thread(s) more after "
            f"{phase} than before its code ran ({job.thread_baseline} -> {now}; allowed: "
            f"{int(timing['max_new_threads'])}): threads it starts (std::thread, pthreads, "
            "Python threads) can work outside the timed calls; do the work inside forward",
            self._correctness_metrics(job) if job.trial_metrics else None))
        return True

    def _start_loop(self, job, label):
        timing = job.timing()
        half = len(job.spot_seeds) // 2
        seeds = job.spot_seeds[:half] if label == "timing" else job.spot_seeds[half:]
        replay = job.first_loop[0].seeds if label == "confirm" else None
        job.loop = timing_plan.Loop(label, timing, seeds, job.entry.facts.get("input_bytes", 0), replay)
        job.proc.send(job.loop.start_command())

    def _loop_called(self, job, message, now):
        try:
            job.loop.called(message, now)
        except timing_plan.LoopRejected as exc:
            self._decide(job, timing_plan.rejection(str(exc), self._correctness_metrics(job)))
            return
        except ValueError as exc:
            self._decide(job, _fail(protocol.RUNTIME_ERROR, str(exc)))
            return
        job.proc.send(job.loop.after_command(message["called"]))

    def _loop_ponged(self, job, message, now):
        try:
            job.loop.ponged(message, now)
        except ValueError as exc:
            self._decide(job, _fail(protocol.RUNTIME_ERROR, str(exc)))
            return
        job.proc.send(job.loop.call_command())

    def _loop_prepared(self, job, message):
        loop = job.loop
        try:
            handed = loop.prepared_report(message)
        except ValueError as exc:
            self._decide(job, _fail(protocol.RUNTIME_ERROR, str(exc)))
            return
        if handed is None:
            self._loop_next(job)
            return
        call = loop.handed
        prefix = f"{job.weight_seed}-{loop.spots[call]}"
        command = {"label": loop.label_of(call), "rule": job.request["options"]["rule"],
                   "reference": dict(job.entry.outputs[prefix], dir=job.entry.dir, prefix=prefix),
                   "candidate": {"dir": job.proc.workdir, "prefix": f"spot-{call}",
                                 "report": {"outputs": handed["outputs"]}}}
        job.judge_started = time.monotonic()
        self.judges.submit(job, command, self._spot_judged)

    def _spot_judged(self, job, result):
        """A judge's result for the timed call whose outputs were handed over: anything
        but a pass rejects (the trials passed, so a timed call that differs computed
        something else when timed: memoized, stale or deferred outputs)."""
        if job.finished or job.decided is not None:
            return
        loop = job.loop
        job.proc.deadline += time.monotonic() - job.judge_started
        for path in glob.glob(os.path.join(job.proc.workdir, f"spot-{loop.handed}-*.bin")):
            os.unlink(path)
        if result["status"] == "error":
            self._decide(job, result)
            return
        if result["status"] != "pass":
            self._decide(job, timing_plan.rejection(
                f"spot check failed: {result.get('message', '')} (its trials passed: the "
                "timed call's output was not computed from that call's inputs)",
                dict(self._correctness_metrics(job), **(result.get("metrics") or {}))))
            return
        self._loop_next(job)

    def _loop_next(self, job):
        if not job.loop.finished:
            job.proc.send(job.loop.ping_command())
            return
        try:
            measured = job.loop.measured()
        except timing_plan.LoopRejected as exc:
            self._decide(job, timing_plan.rejection(str(exc), self._correctness_metrics(job)))
            return
        reference = job.entry.stored_timing(self._timing_key(job), math.inf)
        ms = measured["ms"]
        if job.first_loop is None:
            speedup = reference["ms"] / ms if ms > 0 else math.inf
            if timing_plan.confirmation_needed(job.timing(), speedup):
                job.first_loop = (job.loop, measured)
                self._start_loop(job, "confirm")
                return
            self._timed_pass(job, reference, measured, [])
            return
        first, first_measured = job.first_loop
        first_ms = first_measured["ms"]
        speedup = reference["ms"] / first_ms if first_ms > 0 else math.inf
        message = timing_plan.unconfirmed(job.timing(), first_ms, job.loop.fresh_ms(),
                                          job.loop.replayed_ms(), speedup)
        job.confirmations += 1
        if message is not None and job.confirmations < timing_plan.CONFIRMATION_LOOPS:
            # A burst of load can slow one loop's fresh calls more than its replayed
            # ones: another loop, and only a speed that depends on inputs is slow on
            # fresh inputs both times.
            self._start_loop(job, "confirm")
            return
        if message is not None:
            self._decide(job, timing_plan.rejection(message, self._correctness_metrics(job)))
            return
        self._timed_pass(job, reference, timing_plan.counted(first_measured, measured),
                         ["speedup_confirmed"],
                         dict(job.loop.metrics("confirm"), **first.metrics("timing")))

    def _timed_pass(self, job, reference, measured, flags, loop_metrics=None):
        """`measured`, `reference`: timing.summarise's dicts of the candidate's counted
        loop and of the reference's stored timing."""
        metrics = self._correctness_metrics(job)
        metrics.update(loop_metrics or job.loop.metrics("timing"))
        metrics.update(timing_plan.statistics_metrics("reference", reference))
        metrics.update(timing_plan.statistics_metrics("candidate", measured))
        cand_ms = measured["ms"]
        metrics.update(timing_seconds=time.monotonic() - job.timing_started,
                       speedup=reference["ms"] / cand_ms if cand_ms > 0 else math.inf,
                       reference_age_s=time.time() - reference["measured_at"])
        if metrics["speedup"] > SPEEDUP_FLAG_LIMIT:
            flags.append("speedup_over_10x")
        if job.timing()["baseline"] == "compile":
            if reference.get("compile_unavailable"):
                flags.append("compile_baseline_unavailable")
            elif "compile_ms" in reference:
                metrics["compile_ms"] = reference["compile_ms"]
                metrics["speedup_vs_compile"] = (reference["compile_ms"] / cand_ms
                                                 if cand_ms > 0 else math.inf)
        self._decide(job, {"status": "pass", "metrics": metrics, "flags": flags}, stop=False)

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
                return _error(protocol.HOST_ERROR,
                              f"the candidate's build needs {missing[0]}, which this machine "
                              f"lacks: install {missing[1]} ({label}: {errors.describe(data)})")
        result = _fail(error_class, message)
        if error_class == protocol.OUT_OF_MEMORY:
            result["flags"] = ["out_of_memory"]
        return result

    def _scratch_full(self, job, report):
        """host_error when the candidate's outputs found the scratch filesystem full and
        the candidate did not fill it: its directory holds no more than it had at the
        marker plus the outputs it may keep there (the trials ahead of the judge and a
        spot check's). Its word is not taken for the cause: the filesystem must lack
        room for a trial now, or other jobs of the server ran beside it, which may have
        filled it and freed it again before the server looks (a KernelBench level-1 run
        on the H100 host had a candidate blamed that way). The client retries such a
        job alone (flag scratch_full), and alone a claim with room to spare is the
        candidate's."""
        text = report.get("text") if isinstance(report, dict) else None
        if job.action != "run" or not isinstance(text, str) or "No space left on device" not in text:
            return None
        ahead, trial_bytes = self._trials_ahead(job)
        if _tree_bytes(job.proc.workdir) > job.workdir_bytes + (ahead + 1) * trial_bytes:
            return None
        if not job.had_company and self._scratch_free() >= trial_bytes:
            return None
        return protocol.verdict_result(protocol.host_error(
            f"the harness's scratch filesystem ({self.root}) filled up while the candidate wrote "
            f"its outputs: free space, or point TMPDIR at a larger filesystem", flags=[SCRATCH_FULL]))

    def _decide(self, job, result, stop=True):
        """Records `job`'s verdict; it is sent once its candidate child is gone. `stop`
        kills the child (a failure: nothing more is wanted from it); else the child is
        told it is done and exits by itself."""
        job.decided = result
        if stop:
            _kill_group(job.proc.pid)
        else:
            job.proc.close_commands()

    def _candidate_done(self, proc, status):
        job = proc.owner
        if job is None:  # a standby that died before it got a job (its log says why)
            return
        if job.decided is not None:
            self._finish(job, job.decided)
            return
        if not job.marker:
            why = job.harness_failed or _death_text(proc, status, job.request["limits"], "")
            self._finish(job, _error(protocol.HARNESS_ERROR,
                                     f"the candidate's child failed before it ran any candidate "
                                     f"code: {why}"))
            return
        if job.awaiting_timing:
            where = " during candidate timing"
        elif job.action == "run" and job.ready:
            running = job.next_trial + len(job.reports) + (1 if job.judging else 0)
            where = f" during candidate forward (trial {running + 1})"
        else:
            where = " during candidate import or init" if not job.ready else " during candidate forward"
        self._finish(job, _death_verdict(proc, status, job.request["limits"], where))

    # ---- children ----

    def fork_child(self, role, body, commands=False):
        """A new child of `role` running body(pipes) with its own directory, log and
        pipes; returns its Proc."""
        workdir = tempfile.mkdtemp(prefix="kforge-", dir=self.work_root)
        log_fd = os.open(os.path.join(workdir, "log.txt"),
                         os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        result_r, result_w = os.pipe()
        command_r = command_w = None
        if commands:
            command_r, command_w = os.pipe()
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
        _set_nonblocking(result_r)
        proc = Proc(role, pid, workdir, result_r, command_w)
        self.procs[pid] = proc
        self.selector.register(result_r, selectors.EVENT_READ, proc)
        return proc

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
            parent_fds = own_parent_fds + [self.wake_r, self.wake_w]
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
            data = os.read(proc.read_fd, 1 << 16)
        except BlockingIOError:
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
                if proc.role == "candidate" and proc.lines > self._candidate_lines(proc):
                    self._flood(proc, f"more than {self._candidate_lines(proc)} lines")
                    return
                self._message(proc, line)
        if len(proc.buffer) > MAX_LINE_BYTES:
            self._flood(proc, f"a line of more than {MAX_LINE_BYTES} bytes")

    @staticmethod
    def _candidate_lines(proc):
        return proc.commands + CANDIDATE_LINES_BEYOND_COMMANDS

    def _flood(self, proc, what):
        proc.flooded = True
        proc.buffer = bytearray()
        job = proc.owner
        if proc.role == "candidate" and job is not None and job.marker:
            self._decide(job, _fail(protocol.RUNTIME_ERROR,
                                    f"the candidate's process wrote {what} to the harness's pipe"))
        else:
            _kill_group(proc.pid)

    def _message(self, proc, line):
        message = reporter.decode(line)
        if message is None:
            return
        if proc.role == "candidate":
            self._candidate_message(proc, message)
        elif proc.role == "judge":
            self.judges.message(proc, message)
        elif "result" in message and proc.result is None and isinstance(message["result"], dict):
            proc.result = message["result"]

    def _close_read(self, proc):
        if proc.read_fd is not None:
            self.selector.unregister(proc.read_fd)
            os.close(proc.read_fd)
            proc.read_fd = None

    @staticmethod
    def _exited(pid):
        # WNOWAIT: look without reaping, so the group id stays valid for the kill.
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None

    def _reap(self):
        for pid, proc in list(self.procs.items()):
            if not self._exited(pid):
                continue
            _kill_group(pid)
            _, status = os.waitpid(pid, 0)
            del self.procs[pid]
            self._drain_pipe(proc)
            self._close_read(proc)
            proc.close_commands()
            if proc is self.standby:
                self.standby = None
            try:
                self._exit_handlers[proc.role](self, proc, status)
            finally:
                if proc.role != "judge":
                    shutil.rmtree(proc.workdir, ignore_errors=True)

    def _drain_pipe(self, proc):
        """The child has exited: what it wrote is all in the pipe now."""
        while proc.read_fd is not None:
            try:
                data = os.read(proc.read_fd, 1 << 16)
            except BlockingIOError:
                return
            if not data:
                return
            self._take(proc, data)

    def _check_done(self, proc, status):
        if proc.result is not None:
            self._finish(proc.owner, proc.result)
        else:
            self._finish(proc.owner, _error(protocol.HARNESS_ERROR,
                                            "the checker died: " + _death_text(proc, status, proc.owner.request["limits"], "")))

    def _judge_done(self, proc, status):
        self.judges.died(proc, status)

    _exit_handlers = {"candidate": _candidate_done, "reference": _reference_done,
                      "check": _check_done, "judge": _judge_done}

    def _enforce_deadlines(self):
        now = time.monotonic()
        for proc in self.procs.values():
            if not proc.timed_out and now >= proc.deadline:
                proc.timed_out = True
                _kill_group(proc.pid)


class JudgePool:
    """Up to `size` judge processes, forked when first needed and kept, and up to
    `device_size` device judges (judge.py) for trials with a leaf of at least
    compare.DEVICE_MIN_BYTES; trials wait in a queue for a free judge of their kind. A
    judge that dies or overruns fails the trial it had with a harness_error and is
    replaced by the next fork."""

    def __init__(self, server, size, threads, device_size=0):
        self.server = server
        self.threads = threads
        self.sizes = {False: size, True: device_size}
        self.idle = {False: [], True: []}
        self.queues = {False: [], True: []}
        self.busy = {}  # pid -> proc
        self.next_id = 0

    def device_mb(self):
        """The device memory the device judges may hold (MB)."""
        return self.sizes[True] * JUDGE_DEVICE_MB

    def submit(self, job, command, on_result=None):
        """Queues `command` for a judge; its result goes to on_result(job, result), by
        default the server's judged() (a trial)."""
        on_device = self.sizes[True] > 0 and _largest_leaf_bytes(command["reference"]) >= compare.DEVICE_MIN_BYTES
        self.queues[on_device].append((job, command, on_result or self.server.judged))
        self._dispatch(on_device)

    def _dispatch(self, on_device):
        queue, idle = self.queues[on_device], self.idle[on_device]
        while queue:
            if idle:
                proc = idle.pop()
            elif sum(p.on_device == on_device for p in self.busy.values()) < self.sizes[on_device]:
                device = self.server.device if on_device else None
                try:
                    proc = self.server.fork_child("judge", lambda p: child.judge_main(
                        p["command_r"], p["result_w"], self.threads, device), commands=True)
                except OSError as exc:
                    job, _, on_result = queue.pop(0)
                    on_result(job, _error(protocol.HARNESS_ERROR, f"cannot start a judge: {exc}"))
                    continue
                proc.on_device = on_device
            else:
                return
            job, command, on_result = queue.pop(0)
            if job.finished or job.decided is not None:
                idle.append(proc)
                continue
            self.next_id += 1
            command = dict(command, id=self.next_id)
            proc.owner = (job, self.next_id, on_result)
            proc.deadline = time.monotonic() + JUDGE_TIMEOUT_S
            self.busy[proc.pid] = proc
            if not proc.send(command):
                _kill_group(proc.pid)

    def message(self, proc, message):
        if proc.pid not in self.busy or not isinstance(message.get("result"), dict):
            return
        job, command_id, on_result = proc.owner
        if message.get("id") != command_id:
            return
        del self.busy[proc.pid]
        proc.owner = None
        proc.deadline = math.inf
        self.idle[proc.on_device].append(proc)
        on_result(job, message["result"])
        self._dispatch(proc.on_device)

    def died(self, proc, status):
        if proc in self.idle[proc.on_device]:
            self.idle[proc.on_device].remove(proc)
        if self.busy.pop(proc.pid, None) is not None:
            job, _, on_result = proc.owner
            what = (f"did not finish within {JUDGE_TIMEOUT_S:g} s" if proc.timed_out
                    else _death_text(proc, status, None, ""))
            tail = _tail(os.path.join(proc.workdir, "log.txt"))
            on_result(job, _error(protocol.HARNESS_ERROR,
                                  f"the judge {what}; its log ends with: {tail[-1000:]}"))
        shutil.rmtree(proc.workdir, ignore_errors=True)
        self._dispatch(proc.on_device)


def _largest_leaf_bytes(reference):
    """The largest output leaf of a judge command's reference side, in bytes."""
    return max([leaf.get("nbytes", 0) for leaf in reference.get("leaves", []) if leaf.get("kind") == "tensor"],
               default=0)


def spot_checked(task_format):
    """Whether the timed calls of a task of this format can be spot-checked against the
    reference's stored outputs: the format's session class declares it (with its reason
    where not), so that the server knows no format by name."""
    return runner.session_class(task_format).no_spot_checks_reason is None


def _error(error_class, message):
    return {"status": "error", "error_class": error_class, "message": message}


def _fail(error_class, message):
    return {"status": "fail", "error_class": error_class, "message": message}


def _death_text(proc, status, limits, where):
    if proc.timed_out and limits is not None:
        return f"wall-clock limit of {limits['timeout_s']:g} s hit{where}"
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        return f"killed by {_signal_name(sig)} ({signal.strsignal(sig)}){where}"
    return f"exited with status {os.WEXITSTATUS(status)}{where}"


def _death_verdict(proc, status, limits, where):
    """The verdict for a candidate child that died before its verdict was known."""
    flags = []
    if proc.timed_out:
        error_class = protocol.TIMEOUT
        message = (f"wall-clock limit of {limits['timeout_s']:g} s hit{where}; the "
                   "child's process group was killed")
    elif os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        name = _signal_name(sig)
        if sig == signal.SIGXCPU:
            error_class = protocol.TIMEOUT
            message = f"CPU-time limit of {limits['cpu_s']} s hit{where} ({name})"
        else:
            error_class = protocol.CRASH
            message = f"the child was killed by {name} ({signal.strsignal(sig)}){where}"
            if sig == signal.SIGKILL:
                message += ": not by the harness; often the kernel's OOM killer"
                flags.append("out_of_memory")
    else:
        error_class = protocol.RUNTIME_ERROR
        message = (f"the child exited with status {os.WEXITSTATUS(status)}{where} "
                   "before reporting a result")
    result = _fail(error_class, message)
    result["flags"] = flags
    return result


def _signal_name(sig):
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


def _tree_bytes(path):
    """The bytes the files under `path` occupy on disk (links not followed)."""
    total = 0
    for directory, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(directory, name)).st_blocks * 512
            except OSError:
                continue
    return total


def _tail(path):
    """The end of a child's log. The candidate can replace its log.txt: a link to the
    server's secrets (/proc/self/environ, the store) is not followed, and a FIFO or a
    device is not read, so the tail holds nothing but what the candidate wrote itself."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return ""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return ""
        with os.fdopen(fd, "rb") as handle:
            fd = None
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - 4 * protocol.MAX_LOG_TAIL_CHARS))
            return handle.read().decode("utf-8", errors="replace")[-protocol.MAX_LOG_TAIL_CHARS:]
    except OSError:
        return ""
    finally:
        if fd is not None:
            os.close(fd)


def _remove_abandoned(scratch):
    """Removes the private directories of servers that died without cleaning up (killed
    with their run): their reference stores can hold many GB of outputs. A directory whose
    lock file can be locked has no live server (one just made may not hold it yet: those
    younger than a minute are left alone)."""
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
            continue  # its server is alive
        finally:
            os.close(fd)
        shutil.rmtree(path, ignore_errors=True)
