"""The trusted side of a timed loop: the server plans it, brackets every call with its own
clock, draws the calls it checks, and judges what the child reported against what it saw.
The candidate's loop and the reference's own timing loop run the same code (candidate.py
in a sandboxed child forked from the zygote, the task host filling inputs), so identical
code times the same, and what a call costs beyond its kernel (the exchange, the flush,
the hand-over of its outputs) is measured on the reference's loop and refunded to the
candidates' (charged()). A candidate's process can replace the child's loop, so that
refund holds only what no loop can leave out: the harness's own work in the child (the
layouts parsed, the views made, the last call's outputs freed) is done before the
bracket opens, and the L2 flush is the task host's.

One call k (server, task host H, child C):
    H: make call k's inputs (a seed drawn now) and keep them in its own memory, poison the
       output buffer; returns the layouts
    server: C's processes thawed; {"prepare": k, layouts} -> C; C makes its views of
       the slot (which holds older inputs) and answers; its processes frozen again
    server: clock starts; H copies the inputs into C's slot (and, on a GPU, flushes
       L2); C's processes thawed (SIGCONT without a cgroup); {"call": k, "seed"} -> C
    C: idle device, events around forward, its outputs into the buffer, whole-device
       sync -> {"called": k, "ms", "tail_ms"}
    H: copies the outputs out of the buffer (`take`); clock stops when the copy is done:
       what is judged is that copy, and all of it was written inside the bracket
       (on the CPU: C copies nothing and reports where its outputs lie, the server
       freezes C's processes, the clock stops when they are all stopped, and H reads
       the outputs out of C after that, handover/read.py)
    server: C's processes frozen (SIGSTOP without a cgroup): nothing of them runs on the
       host until the next call. A kernel that outlives the call runs on the device,
       frozen or not, but the next call's inputs reach memory C maps only once that
       call's clock has started.
    H: every output element written (no poison), inputs unchanged; with probability
       `spot_check_rate`, drawn now and independently per call, the outputs compared with
       the reference's on the same inputs.
Because each check is drawn after its call, independently of every other, a call that is
checked looks like any other while it runs, and knowing which earlier calls were checked
says nothing of the next: a candidate that skips the work on a share f of n calls passes
the checks with probability (1 - rate)^(f n) (with the default rate 0.25 and KernelBench's
100 timed calls: 6e-7 for f = 0.5, the least that moves a median; 6e-2 for f = 0.1). A
call whose outputs repeat an earlier call's byte for byte is always checked (a memo, a
cache, a constant: every call's inputs are new), whatever the draw.

The loop's evidence is judged by anticheat/timing.py (the gap and the tail, each against
the reference's loop) and by the task host's checks (anticheat/buffers.py, the spot
checks). A bound broken once is measured again (the reference's loop and the
candidate's, anew): load comes and goes, a cheat does not. Every claimed speedup above
`confirm_speedup` is measured again, the reference's loop and then a second loop of the
candidate's, and the smaller of the two speedups counts."""

import math
import secrets
import statistics

from kforge_harness.anticheat.timing import mad
from kforge_harness.timing.timing import summarise


def draw_seed():
    return secrets.randbelow(1 << 62)


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


class Loop:
    """One timed loop of a child, as the server runs it."""

    def __init__(self, label, timing):
        self.label = label
        self.timing = timing
        self.warmup = int(timing["warmup"])
        self.calls = self.warmup + int(timing["trials"])
        self.rate = float(timing["spot_check_rate"])
        self.seeds = []
        self.event_ms, self.tail_ms, self.wall_ms = [], [], []
        # Per call, what the child says its harness did beside the forward (feeding the
        # inputs, settling, checking and handing over the outputs): believed of the
        # reference's own loop only (record()), where no candidate code runs.
        self.harness_ms = []
        # Per call, what of that was making the call's inputs from its seed (a task whose
        # inputs cannot cross by buffer makes them in the child, inside the bracket):
        # refunded like the rest, it flags the verdict (inputs_made_in_call).
        self.inputs_ms = []
        # Per call, a trusted exchange's cost at that moment (the server's round trip with
        # the task host less the host's own work): the machine's load, paired call by call.
        self.exchange_ms = []
        self.exchange_now = 0.0
        self.fill_sent = 0.0
        # Per call, its preparation on the server's clock (from `prepare` sent to the
        # child's processes frozen again), less the trusted exchange: candidate code runs
        # there too (a finalizer of the last outputs, a thread), so it is bracketed.
        self.prepare_ms = []
        self.prepare_sent = None
        self.checked = []
        self.prepared = False
        self.preparing = None  # the call whose preparation the child was asked for
        self.call_sent = False  # the call's command sent, its report not taken yet
        self.call_inputs = {}  # what the call's command carries of its inputs' description
        self.commanded_at = None
        # The child's worker process the task host reads each call's outputs out of
        # (handover/read.py), or None where they cross by the child's copy.
        self.read_from = None

    @property
    def next_call(self):
        return len(self.event_ms)

    @property
    def finished(self):
        return len(self.event_ms) == self.calls

    def seed_for_next(self):
        self.seeds.append(draw_seed())
        return self.seeds[-1]

    def check_drawn(self, call):
        """Whether `call` is checked: drawn once it ran (its report in, its processes
        stopped), so nothing of the candidate's can know it."""
        checked = self.rate > 0 and secrets.randbelow(1 << 30) < self.rate * (1 << 30)
        if checked:
            self.checked.append(call)
        return checked

    def label_of(self, call):
        what = "warm-up call" if call < self.warmup else "timed call"
        loop = {"confirm": "the confirmation", "reference": "the reference's timing",
                "compiled": "the torch.compile baseline's timing"}.get(self.label, "the timing")
        return f"{what} {call + 1} of {self.calls} in {loop}"

    def called(self, message, wall_ms):
        """Takes a {"called": k, "ms", "tail_ms"} line; ValueError when out of turn or
        malformed."""
        if message.get("called") != len(self.event_ms) or self.commanded_at is None:
            raise ValueError("the candidate's process reported a timed call it was not asked for")
        event, tail, harness = message.get("ms"), message.get("tail_ms"), message.get("harness_ms", 0.0)
        inputs = message.get("inputs_ms", 0.0)
        if not (_number(event) and _number(tail) and _number(harness) and _number(inputs)
                and min(event, tail, harness, inputs) >= 0):
            raise ValueError("the candidate's process handed over malformed timings")
        self.commanded_at = None
        self.event_ms.append(float(event))
        self.tail_ms.append(float(tail))
        self.harness_ms.append(float(harness))
        self.inputs_ms.append(min(float(inputs), float(harness)))
        self.wall_ms.append(float(wall_ms))
        self.exchange_ms.append(self.exchange_now)

    # ---- the evidence ----

    def timed(self, values):
        return values[self.warmup:]

    def gaps(self):
        """Per timed call: the server's bracket less the call's event time and less the
        trusted exchange measured just before it (what load added to every process then)."""
        return [w - e - x for w, e, x in zip(self.timed(self.wall_ms), self.timed(self.event_ms),
                                               self.timed(self.exchange_ms))]

    def preparation_done(self, sent, now):
        """Call k's preparation ended at `now` (its processes frozen again)."""
        self.prepare_ms.append(max(0.0, (now - sent) * 1e3 - self.exchange_now))

    def seen(self, reference=None):
        """Per timed call: the server's bracket less the trusted exchange measured just
        before it, the call as the server's clock sees it; with a `reference` record,
        plus what this loop's preparations took beyond the reference's (their medians,
        less the noise of the reference's preparations, three MADs over the root of
        their number, and the gap bound's allowance for load: a preparation is a round
        trip and a freeze, which load lengthens, and work there can use nothing of the
        call's inputs), the same for every call. The noise is the reference's alone, as
        in charged(): a loop that spread its own preparations would otherwise widen what
        moving work there costs nothing (helper 39). Load lengthens a long preparation
        (values laid out whole made there from a public seed) in proportion: the
        allowance holds `max_gap_share` of the reference's preparation too. Nothing of
        the call is known there to compute ahead with it (its numbers come with it)."""
        seen = [w - x for w, x in zip(self.timed(self.wall_ms), self.timed(self.exchange_ms))]
        if reference is None:
            return seen
        preparations = self.timed(self.prepare_ms)
        noise = 3 * reference["prepare_mad"] / math.sqrt(max(1, len(preparations)))
        allowance = (float(self.timing["max_wall_gap_ms"]) + float(self.timing["max_gap_share"]) *
                     (reference["summary"]["ms"] + reference["prepare_ms"]))
        beyond = max(0.0, statistics.median(preparations) - reference["prepare_ms"] - noise - allowance)
        return [s + beyond for s in seen]

    def record(self, measured_at):
        """What a reference loop leaves for the candidates' loops to be judged against."""
        gaps = self.gaps()
        events, seen = self.timed(self.event_ms), self.seen()
        per_call = call_allowance(self.timing, statistics.median(events), mad(gaps))
        return {"summary": vouched(events, seen, statistics.median(gaps), per_call,
                                   statistics.median(events)),
                "gap_ms": statistics.median(gaps), "gap_mad": mad(gaps), "seen_mad": mad(seen),
                "tail_ms": statistics.median(self.timed(self.tail_ms)),
                "prepare_ms": statistics.median(self.timed(self.prepare_ms)),
                "prepare_mad": mad(self.timed(self.prepare_ms)),
                "harness_ms": statistics.median(self.timed(self.harness_ms)),
                "inputs_ms": statistics.median(self.timed(self.inputs_ms)),
                "wall_ms": statistics.median(self.timed(self.wall_ms)), "measured_at": measured_at}

    def metrics(self, prefix):
        gaps = self.gaps()
        return {f"{prefix}_wall_ms": statistics.median(self.timed(self.wall_ms)),
                f"{prefix}_gap_ms": statistics.median(gaps),
                f"{prefix}_tail_ms": statistics.median(self.timed(self.tail_ms)),
                f"{prefix}_prepare_ms": statistics.median(self.timed(self.prepare_ms)),
                f"{prefix}_spot_checks": len(self.checked), f"{prefix}_calls": self.calls}


def statistics_metrics(party, measured):
    """The metrics of one party's ("candidate", "reference") timing.summarise dict:
    {party}_ms (the median), {party}_ms_p90, {party}_ms_mean, _std, _min, _max, and
    {party}_timing_trials, the number of timed calls they describe."""
    metrics = {f"{party}_ms": measured["ms"], f"{party}_ms_p90": measured["p90"]}
    for name in ("mean", "std", "min", "max"):
        metrics[f"{party}_ms_{name}"] = measured[name]
    metrics[f"{party}_timing_trials"] = measured["trials"]
    return metrics


def charged(loop, reference):
    """The timing.summarise dict of a candidate's loop (and "charged_ms"), its median no
    less than what the server's own clock can vouch for. The clock sees each call's
    bracket less the trusted exchange measured just before it; less what the same path
    costs around the reference's calls (the reference's gap), that is the call's time
    give or take the noise of both loops. A median below the most the clock allows
    (that time plus the noise) is raised to it: a speedup counts only as far as the
    server's clock shows it, so a clock, a report or a channel rewritten in the
    candidate's process, or work hidden from its clock, gains nothing. The raise stops at
    the reference's median (a speedup smaller than the machine's noise counts as none,
    never as a slowdown) unless the clock shows more than that median beyond what load
    explains: then the least the clock vouches for, less the allowance the gap bound
    gives load (anticheat/timing.py: `max_wall_gap_ms`, `max_gap_share` of the call, the
    noise of the reference's loop), is the candidate's, so that a slow kernel reporting a fast one is not rounded
    up to the reference's speed (seen on an H200: an honest candidate's gap 0.1 to 0.18 ms
    above the reference loop's, which the noise alone did not cover).
    Spreading its own calls only widens the noise the candidate is charged up to the
    reference's median, never the allowance beyond it. The calls' preparations (outside
    their brackets) taking longer than the reference's is the calls' time too: work
    moved there is seen. The rest of the distribution is vouched for call by call (vouched)."""
    events = loop.timed(loop.event_ms)
    reported = statistics.median(events)
    seen = loop.seen(reference)
    root_n = math.sqrt(max(1, len(seen)))
    noise = 3 * (reference["gap_mad"] + mad(seen)) / root_n
    clock_ms = statistics.median(seen) - refunded_gap(loop.timing, reference)
    # The allowance refunds noise the reference's loop showed, never the candidate's own:
    # a loop that spreads its own calls would otherwise buy itself a larger refund.
    trusted_noise = 3 * (reference["gap_mad"] + reference["seen_mad"]) / root_n
    allowance = (float(loop.timing["max_wall_gap_ms"]) +
                 float(loop.timing["max_gap_share"]) * reference["summary"]["ms"] + trusted_noise)
    most = max(min(clock_ms + noise, reference["summary"]["ms"]), clock_ms - allowance)
    floor = resolution_ms(loop.timing, reference)
    median_ms = max(reported, most, floor)
    measured = vouched(events, seen, refunded_gap(loop.timing, reference),
                       call_allowance(loop.timing, reference["summary"]["ms"], reference["gap_mad"]),
                       median_ms, floor)
    measured["below_clock_resolution"] = reported < floor
    measured["charged_ms"] = median_ms - reported
    measured["clock_noise_ms"] = noise
    return measured


def call_allowance(timing, call_ms, gap_mad):
    """What load may add to one call's bracket beyond its events and the refunded gap:
    the gap bound's allowance, with the spread of single calls' gaps (not of a median)."""
    return float(timing["max_wall_gap_ms"]) + float(timing["max_gap_share"]) * call_ms + 3 * gap_mad


def vouched(events, seen, refund, per_call, median_ms, floor=0.0):
    """timing.summarise of a loop's calls, each call's reported time no less than the
    server's clock of it (`seen` less the `refund`) less the load one call may see
    (`per_call`), nor than `floor`, then all moved so that the median is `median_ms`
    (the median's own bound, charged()): the statistics beside the median (mean, min,
    p90: the KernelBench export's `runtime` is the mean) are the clock's as the median
    is. Bounded through the median alone, a loop whose calls were honest but reported 0
    ms on 9 of every 20 kept its median and speedup and showed a fastest call of 0 and a
    mean 0.6 of its controls' (red team 20). The spread of the clock itself (each call's
    bracket moved to the median) was tried and is no measure for short calls: on an
    H200 it put a 0.055 ms kernel's mean at 0.11 to 0.14 ms, the exchange's jitter. Both
    parties' loops are summarised alike; the mean is no less than the median."""
    calls = [max(event, clock - refund - per_call, floor) for event, clock in zip(events, seen)]
    shift = median_ms - statistics.median(calls)
    measured = summarise([max(floor, call + shift) for call in calls])
    # A call is slowed by what happens beside it, never sped up: a mean below the median
    # says that a minority of calls reported less than they took, which one call's load
    # on a loaded machine (3 ms of gaps' spread on the 2-core VM) can hide from the
    # clock call by call. The mean is no less than the median.
    measured["mean"] = max(measured["mean"], measured["ms"])
    return measured


# No call's time is told apart below a microsecond: the least a candidate is charged
# (resolution_ms), so that no speedup is infinite.
CLOCK_RESOLUTION_MS = 0.001


def resolution_ms(timing, reference):
    """The least time the server's clock can vouch for a candidate's call: the
    reference's harness work that refunded_gap refunds (a loop of the candidate's own can
    leave it out), no more than the reference's own time, and never below
    CLOCK_RESOLUTION_MS. Above it, the clock bounds a lean loop's gain to that work's
    share of the call; below it the clock sees nothing: a lean loop on a forward shorter
    than the refund (0.05 ms against 0.08 of harness work) left the clock at 0 or below,
    so that its report of 0 ms stood and the speedup was infinite (helper 39). A candidate
    charged up to it is flagged `below_clock_resolution`: its speedup, at most the
    reference's time over this, is all the clock can confirm."""
    refundable = min(float(reference.get("harness_ms", 0.0)), float(timing["max_harness_refund_ms"]))
    return max(CLOCK_RESOLUTION_MS, min(reference["summary"]["ms"], refundable))


def refunded_gap(timing, reference):
    """What of the reference's gap the server's clock refunds to a candidate's calls: all
    of it but the work the reference's child does in the bracket beside the forward and
    the copies (harness_ms) beyond `max_harness_refund_ms` a call. That work runs in the
    child's process, where a candidate's loop of its own can leave it out; refunded
    whole, it was the speedup of a loop that did (red team 15: 2048 outputs, 1.41x to
    33x). Making the call's inputs from its seed, where some are made in the child, is
    such work too: refunded whole once, a loop that made only the little it used (or
    nothing: x is in the slot) and reported 0.02 ms passed at 144x to 1268x (red team
    19x: a list of 2048 numbers, a dtype, a SimpleNamespace beside x), the refund larger
    than its whole bracket, so that no clock could contradict the report. Refunded up to
    a call's worth of a few leaves, such a loop gains at most that, and an honest
    candidate is charged the rest of the harness's work as its own: its speedup
    understated by the making, which the flag `inputs_made_in_call` says (the
    reference's own code as a candidate scored 0.42x to 0.73x so in red team 16)."""
    beyond = max(0.0, float(reference.get("harness_ms", 0.0)) - float(timing["max_harness_refund_ms"]))
    return reference["gap_ms"] - beyond


def clock_disagrees(measured):
    """Whether the child's report and the server's clock disagree beyond chance: the
    charge less the noise charged() allows (what the clock saw beyond the report and the
    reference's gap) is larger than that noise again. Either the report lies, or the load
    changed since the reference's gap was measured (on a shared machine, in seconds):
    measured again, back to back, before the charge counts."""
    return measured["charged_ms"] - measured["clock_noise_ms"] > measured["clock_noise_ms"]


def counted(first, second):
    """Of a timing loop and its confirmation, each a (reference record, timing.summarise
    dict) pair measured back to back, the one that counts: the smaller speedup, whole, so
    that its statistics describe the calls its median comes from and its reference is
    the one timed beside it."""
    def speedup(pair):
        reference, measured = pair
        return reference["summary"]["ms"] / measured["ms"]
    return second if speedup(second) <= speedup(first) else first


def speedup_vs_compile(reference, candidate_ms, within_noise):
    """torch.compile's time for the reference (`reference["compile_ms"]`) over the
    candidate's. A speedup over the reference within the noise (unconfirmed, counted as
    1.0) makes the candidate as fast as the reference, no faster: against torch.compile
    too."""
    counted = max(candidate_ms, reference["summary"]["ms"]) if within_noise else candidate_ms
    return reference["compile_ms"] / counted


def confirmation_needed(timing, speedup):
    return speedup > float(timing["confirm_speedup"])
