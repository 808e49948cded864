"""The bounds a timed loop's evidence must keep (timing_plan.py runs the loop): each
compares what the candidate's child reported with what was seen outside it, on the same
code path as the reference's own loop.

- tail: how long the whole device ran on after the call's own stream was done, against
  the reference's tail (work on a private stream, work left running; the child's own
  number, which can only count against it);
- gap: the server's bracket of a call less the child's event time, against the same gap
  around the reference's calls (work hidden from the events: a doctored clock, work
  before or after them; between calls the child is stopped, so nothing runs there).
  A gap above the reference's but within what load explains is not rejected: the
  server's clock bounds the candidate's time instead (timing_plan.charged), so hidden
  work never pays."""

import math
import statistics


REJECT_FLOOR_MS = 2.0


def mad(values):
    middle = statistics.median(values)
    return statistics.median(abs(v - middle) for v in values)


def violation(loop, reference):
    """Why `loop`'s evidence disagrees with its events beyond the bounds, measured
    against `reference` (a reference loop's record), or None."""
    timing = loop.timing
    event = statistics.median(loop.timed(loop.event_ms))
    share = float(timing["max_gap_share"])
    tail = statistics.median(loop.timed(loop.tail_ms))
    tail_bound = float(timing["max_sync_gap_ms"]) + share * event + reference["tail_ms"]
    if tail > tail_bound:
        return (f"{loop.label}: the whole device finished {tail:.4g} ms (median) after the "
                f"timed call's own stream did (its event time: {event:.4g} ms), more than the "
                f"bound of {tail_bound:.4g} ms (the reference's own tail is "
                f"{reference['tail_ms']:.3g} ms): work outside the call's stream (a private "
                "stream, work left running) is not counted by the events")
    gaps = loop.gaps()
    gap = statistics.median(gaps)
    noise = 3 * (reference["gap_mad"] + mad(gaps)) / math.sqrt(max(1, len(gaps)))
    bound = reference["gap_ms"] + float(timing["max_wall_gap_ms"]) + share * event + noise
    # Below as much again as the call itself (and 2 ms, what load adds to a loaded 2-core
    # machine's exchanges: an honest candidate of the default run was rejected at 0.5 ms)
    # the server's clock bounds the candidate's time instead (timing_plan.charged): a
    # rejection is for what no load explains.
    bound = max(bound, reference["gap_ms"] + max(event, REJECT_FLOOR_MS))
    if gap > bound:
        return (f"{loop.label}: the server's clock saw {statistics.median(loop.timed(loop.wall_ms)):.4g} "
                f"ms per timed call (median), {gap:.4g} ms more than the candidate's own "
                f"{event:.4g} ms; the same code path around the reference's calls costs "
                f"{reference['gap_ms']:.4g} ms; beyond the bound of {bound:.4g} ms its process "
                "did work its timings do not show")
    return None
