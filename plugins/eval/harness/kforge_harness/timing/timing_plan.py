"""The trusted side of a candidate's timing: the server plans each timed loop, brackets
every call with its own clock, picks the calls whose outputs are checked, and decides.
Nothing here runs candidate code; what the candidate child reports is data, checked
against what the server saw itself.

A loop of `warmup + trials` calls goes (server -> child, child -> server):
    {"time": {"label", "calls", "pool": [seed per slot], "flush_l2"}}
                -> {"prepared": -1, "bare_gap_ms"}
    per call k: {"ping": k} -> {"pong": k}   (the server times the exchange: its overhead)
                {"call": k}          (the server's clock starts)
                -> {"called": k, "ms", "synced_ms", "tail_ms", "types"}   (the server's clock stops)
                {"after": k, "hand": bool, "refill": seed | null}
                -> {"prepared": k, "outputs": leaves | null, "bare_gap_ms"}
`hand` asks for call k's outputs (files spot-k-*), which a judge compares with the
reference's outputs for that call's input seed: the child learns whether a call is
checked only after the call returned. `refill` replaces call k's pool slot with the
input set of call k + pool size. Every call's input seed is distinct within a loop; the
checked ones come from seeds drawn once per task (the reference worker computes their
outputs, once), the others are drawn per call; the child sees a seed only when it makes
that set. A confirmation loop replays, at every other call not spot-checked, the input
set the timing loop's call at the same position had: its fresh and its replayed calls,
interleaved, tell a speed that depends on inputs seen before from a machine that got
slower."""

import math
import secrets
import statistics
import time

from kforge_harness import protocol
from kforge_harness.timing.timing import pool_size, summarise

# Output types a timed call may return: plain tensors (the exact type, so a lazy
# subclass that computes on first access is refused), and arrays for a NumPy reference
# timed as its own candidate.
PLAIN_TYPES = ("torch.Tensor", "numpy.ndarray",
               # Plain values hold no deferred work (a kernelbenchx test's results may
               # carry them beside its tensors).
               "builtins.NoneType", "builtins.bool", "builtins.int", "builtins.float",
               "builtins.str")
LABELS = ("timing", "confirm")


def draw_seed():
    return secrets.randbelow(1 << 62)


def spot_seed_count(timing):
    return min(int(timing["spot_checks"]), int(timing["trials"]))


def spot_positions(warmup, trials, count):
    """`count` distinct timed-call indices, drawn unpredictably: one among the last
    quarter of the calls (real work only in the first calls is caught), the rest among
    all timed calls."""
    if count <= 0:
        return []
    calls = warmup + trials
    late = range(calls - max(1, trials // 4), calls)
    chosen = {late[secrets.randbelow(len(late))]}
    timed = [k for k in range(warmup, calls) if k not in chosen]
    while len(chosen) < count and timed:
        chosen.add(timed.pop(secrets.randbelow(len(timed))))
    return sorted(chosen)


class LoopRejected(Exception):
    """The loop's evidence rejects the candidate: the message says why."""


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


class Loop:
    """One timed loop of a candidate child, as the server runs it."""

    def __init__(self, label, timing, spot_seeds, set_bytes, replay=None):
        """`replay`: the seeds of an earlier loop (as many calls), replayed at every other
        timed call that is not spot-checked (the second, fourth... of those): with two or
        more such calls at least one replays and one does not, wherever the spot checks
        fell."""
        self.label = label
        self.timing = timing
        self.warmup = int(timing["warmup"])
        self.calls = self.warmup + int(timing["trials"])
        self.pool = pool_size(set_bytes, self.calls, float(timing["pool_mb"]))
        self.seeds = [draw_seed() for _ in range(self.calls)]
        self.spots = {}
        for position, seed in zip(spot_positions(self.warmup, int(timing["trials"]),
                                                 len(spot_seeds)), spot_seeds):
            self.seeds[position] = seed
            self.spots[position] = seed
        self.replayed = set()
        if replay is not None:
            unchecked = [k for k in range(self.warmup, self.calls) if k not in self.spots]
            self.replayed = set(unchecked[1::2])
            for position in self.replayed:
                self.seeds[position] = replay[position]
        self.event_ms, self.synced_ms, self.wall_ms, self.ping_ms = [], [], [], []
        self.tail_ms = []  # the whole device's wait after each call's own stream was done
        self.bare_gap_ms = []  # the tails of the child's empty brackets, one before each call
        self.prepared = -2  # the last call whose aftermath the child finished
        self.commanded_at = None
        self.handed = None  # the call whose outputs were asked for

    # ---- commands ----

    def start_command(self):
        return {"time": {"label": self.label, "calls": self.calls,
                         "pool": self.seeds[:self.pool],
                         "flush_l2": bool(self.timing["flush_l2"])}}

    def ping_command(self):
        self.commanded_at = time.monotonic()
        return {"ping": len(self.event_ms)}

    def ponged(self, message, now):
        """Takes a {"pong": k} line: how long a bare exchange with the child takes now
        (pipes, JSON, waking two processes), which the call's bracket pays too."""
        if self.commanded_at is None or message.get("pong") != len(self.event_ms) \
                or len(self.ping_ms) != len(self.event_ms):
            raise ValueError("the candidate's process answered a ping it was not sent")
        self.ping_ms.append((now - self.commanded_at) * 1e3)

    def call_command(self):
        self.commanded_at = time.monotonic()
        return {"call": len(self.event_ms)}

    def after_command(self, call):
        refill = self.seeds[call + self.pool] if call + self.pool < self.calls else None
        self.handed = call if call in self.spots else None
        return {"after": call, "hand": self.handed is not None, "refill": refill}

    @property
    def finished(self):
        return self.prepared == self.calls - 1

    def label_of(self, call):
        what = "warm-up call" if call < self.warmup else "timed call"
        loop = "the confirmation" if self.label == "confirm" else "the timing"
        return f"{what} {call + 1} of {self.calls} in {loop} (input seed {self.seeds[call]})"

    # ---- what the child reported ----

    def called(self, message, now):
        """Takes a {"called": k, ...} line; raises LoopRejected, or ValueError for a
        report out of turn or malformed."""
        call = message.get("called")
        if self.commanded_at is None or call != len(self.event_ms) \
                or len(self.ping_ms) != call + 1:
            raise ValueError("the candidate's process reported a timed call it was not asked for")
        wall = (now - self.commanded_at) * 1e3
        self.commanded_at = None
        event, synced, types = message.get("ms"), message.get("synced_ms"), message.get("types")
        tail = message.get("tail_ms")
        if not (_number(event) and _number(synced) and _number(tail) and min(event, synced, tail) >= 0
                and isinstance(types, list) and all(isinstance(t, str) for t in types)):
            raise ValueError("the candidate's process handed over malformed timings")
        for index, name in enumerate(types):
            if name not in PLAIN_TYPES:
                raise LoopRejected(
                    f"{self.label_of(call)} returned output #{index} as a {name[:200]}, not a "
                    "plain torch.Tensor: a tensor subclass can defer its work past the timed "
                    "call; return plain tensors")
        self.event_ms.append(float(event))
        self.synced_ms.append(float(synced))
        self.tail_ms.append(float(tail))
        self.wall_ms.append(wall)

    def prepared_report(self, message):
        """Takes a {"prepared": k, "outputs": ...} line; returns the leaves to judge when
        call k's outputs were asked for, else None. ValueError when out of turn."""
        call = message.get("prepared")
        expected = len(self.event_ms) - 1
        if call != expected or self.prepared != expected - 1:
            raise ValueError("the candidate's process finished a call it was not asked for")
        bare = message.get("bare_gap_ms")
        if not (_number(bare) and bare >= 0):
            raise ValueError("the candidate's process handed over a malformed bare bracket")
        self.bare_gap_ms.append(float(bare))
        self.prepared = call
        if self.handed is not None and call == self.handed:
            if not isinstance(message.get("outputs"), list):
                raise ValueError("the candidate's process handed over no outputs of a checked call")
            return message
        return None

    # ---- the verdict ----

    def measured(self):
        """timing.summarise of the timed calls' event times (warm-up calls excluded);
        LoopRejected when what the device and the server's clock saw disagree with them
        beyond the stated bounds."""
        event = self.event_ms[self.warmup:]
        synced = self.synced_ms[self.warmup:]
        wall = self.wall_ms[self.warmup:]
        median = statistics.median(event)
        ratio = float(self.timing["max_gap_share"])
        # The tail: how long the whole device ran on after the call's own stream was
        # done. The host's own time in the call (Python, a kernel launcher) is over by
        # then: judged by the whole synchronised time less the event time instead, honest
        # Triton kernels in spawned children on the H100 host were 0.28-0.40 ms "late" and
        # rejected. The bound allows an empty bracket's tail in this process (the child
        # measures one before each call), at most max_wall_gap_ms of it: the sync guard
        # never gets looser than the server's own clock is.
        tail = statistics.median(self.tail_ms[self.warmup:])
        bare = min(statistics.median(self.bare_gap_ms) if self.bare_gap_ms else 0.0,
                   float(self.timing["max_wall_gap_ms"]))
        sync_bound = float(self.timing["max_sync_gap_ms"]) + ratio * median + bare
        if tail > sync_bound:
            raise LoopRejected(
                f"{self.label}: the whole device finished {tail:.4g} ms (median) after the "
                f"timed call's own stream did (device-synchronised time per call, median "
                f"{statistics.median(synced):.4g} ms; device-event time, median {median:.4g} ms), "
                f"more than the bound of {sync_bound:.4g} ms (an empty bracket's tail is "
                f"{bare:.3g} ms here): work outside the current stream (a private stream, work "
                "left running) is not counted by the events")
        # What an honest call's bracket adds: a bare exchange's cost, paired call by call
        # (load comes and goes), and how much exchanges vary on this machine now (a
        # loaded host wakes processes late): every call counts, warm-up calls included.
        # The lower quartile of the gaps is judged: work a candidate hides in its calls
        # is in every call it fakes, while the host's delays only ever add to some (the
        # median rejected honest candidates on a loaded 2-core machine).
        gaps = sorted(w - p - e for w, p, e in zip(self.wall_ms, self.ping_ms, self.event_ms))
        wall_gap = gaps[len(gaps) // 4]
        ping_median = statistics.median(self.ping_ms)
        spread = statistics.median(abs(p - ping_median) for p in self.ping_ms)
        wall_bound = float(self.timing["max_wall_gap_ms"]) + ratio * median + 3 * spread
        if wall_gap > wall_bound:
            raise LoopRejected(
                f"{self.label}: the server's clock saw {statistics.median(wall):.4g} ms per "
                f"timed call (median), {wall_gap:.4g} ms (lower quartile) more than the candidate's own "
                f"{median:.4g} ms plus a bare exchange with its process ({ping_median:.4g} ms, "
                f"varying by {spread:.3g} ms), beyond the bound of {wall_bound:.4g} ms: its "
                "process did work its timings do not show")
        return summarise(event)

    def fresh_ms(self):
        """The median event time of the timed calls on input sets not replayed."""
        return statistics.median(ms for k, ms in enumerate(self.event_ms)
                                 if k >= self.warmup and k not in self.replayed)

    def replayed_ms(self):
        """The median event time of the calls on replayed input sets (None: none)."""
        replayed = [ms for k, ms in enumerate(self.event_ms) if k in self.replayed]
        return statistics.median(replayed) if replayed else None

    def metrics(self, prefix):
        metrics = {f"{prefix}_wall_ms": statistics.median(self.wall_ms[self.warmup:]),
                   f"{prefix}_exchange_ms": statistics.median(self.ping_ms[self.warmup:]),
                   f"{prefix}_synced_ms": statistics.median(self.synced_ms[self.warmup:]),
                   f"{prefix}_pool_sets": self.pool, f"{prefix}_spot_checks": len(self.spots)}
        if self.replayed_ms() is not None:
            metrics[f"{prefix}_replayed_ms"] = self.replayed_ms()
        return metrics


def statistics_metrics(party, measured):
    """The metrics of one party's ("candidate", "reference") timing.summarise dict:
    {party}_ms (the median), {party}_ms_p90, {party}_ms_mean, _std, _min, _max, and
    {party}_timing_trials, the number of timed calls they describe."""
    metrics = {f"{party}_ms": measured["ms"], f"{party}_ms_p90": measured["p90"]}
    for name in ("mean", "std", "min", "max"):
        metrics[f"{party}_ms_{name}"] = measured[name]
    metrics[f"{party}_timing_trials"] = measured["trials"]
    return metrics


def counted(first, second):
    """Of a timing loop's and its confirmation loop's timing.summarise dicts, the one that
    counts: the slower (by median), whole, so that its statistics describe the calls its
    median comes from."""
    return second if second["ms"] >= first["ms"] else first


# Confirmation loops before a speedup counts as unconfirmed: a burst of load can still
# slow one loop's fresh calls more than its replayed ones; a speed that depends on inputs
# seen before does so in every loop.
CONFIRMATION_LOOPS = 2


def confirmation_needed(timing, speedup):
    return speedup > float(timing["confirm_speedup"])


def unconfirmed(timing, first_ms, fresh_ms, seen_ms, speedup):
    """The rejection's message when a confirmation loop does not confirm the first loop's
    time, else None. `fresh_ms`: its median on fresh inputs; `seen_ms`: on the first
    loop's inputs, replayed in the same loop (None when it replayed none). The fresh
    calls confirm when they are as fast as the first loop was, or as fast as the replayed
    calls beside them: then the machine is slower now, for inputs seen before too, and
    the slower loop counts (timing_plan.counted)."""
    tolerance = float(timing["confirm_tolerance"])
    if fresh_ms <= first_ms * (1.0 + tolerance):
        return None
    if seen_ms is not None and fresh_ms <= seen_ms * (1.0 + tolerance):
        return None
    if seen_ms is None:
        return (f"the speedup of {speedup:.3g}x was not confirmed: a second measurement with "
                f"other inputs took {fresh_ms:.4g} ms per call against {first_ms:.4g} ms (more "
                f"than {tolerance:.0%} slower): its speed depends on inputs it has seen before")
    return (f"the speedup of {speedup:.3g}x was not confirmed: a second measurement with "
            f"other inputs took {fresh_ms:.4g} ms per call against {first_ms:.4g} ms, while "
            f"the same loop's calls on the first loop's inputs took {seen_ms:.4g} ms (more "
            f"than {tolerance:.0%} faster): its speed depends on inputs it has seen before")


def rejection(message, metrics=None):
    return {"status": "fail", "error_class": protocol.CHEAT_DETECTED,
            "message": f"timing: {message}", "metrics": metrics or {}}
