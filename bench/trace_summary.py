"""Where each job's time went, from a harness server's timeline (KFORGE_HARNESS_TRACE=FILE,
kforge_harness/server/trace.py). Per job, in seconds: its whole life (start to answer);
waiting for its task's host to be ready (where the job started it); its child's set-up
(started to `ready`); time spent by the task host on its commands, by verb, and time its
commands were held for other jobs' timing loops; its timing loops, waited for and run.
The totals show what ran one at a time (the loops) against the run's span.

    KFORGE_HARNESS_TRACE=/tmp/trace.jsonl kforge run PIPELINE ...   # the server inherits it
    python3 bench/trace_summary.py /tmp/trace.jsonl"""

import collections
import json
import sys


def summarise(lines):
    events = [json.loads(line) for line in lines if line.strip()]
    by_job = collections.defaultdict(list)
    # Request ids are per server: with several servers in one file (one per device), a
    # job is named by its server too.
    several = len({event.get("server") for event in events}) > 1
    for event in events:
        if several and event["job"] is not None:
            event["job"] = f"{event.get('server')}/{event['job']}"
        by_job[event["job"]].append(event)
    sent = {}  # (host, command) -> (job, verb, t)
    work = collections.defaultdict(lambda: collections.defaultdict(float))
    for event in events:
        if event["what"] == "host_sent":
            sent[(event["host"], event["command"])] = (event["job"], event["verb"], event["t"])
        elif event["what"] == "host_answered" and (event["host"], event["command"]) in sent:
            job, verb, t = sent.pop((event["host"], event["command"]))
            work[job][verb] += event["t"] - t
    rows, loops_run = [], 0.0
    for job, seq in by_job.items():
        if job is None:
            continue
        first = {}
        for event in seq:
            first.setdefault(event["what"], event["t"])
        start, end = first.get("start", seq[0]["t"]), seq[-1]["t"]
        for event in seq:
            if event["what"] == "finish":
                end = event["t"]
        held, asked = 0.0, {}
        loop_wait = loop_run = 0.0
        loop_asked = loop_started = None
        ready = None
        for event in seq:
            what = event["what"]
            if what == "host_asked":
                asked.setdefault(event["verb"], []).append(event["t"])
            elif what == "host_sent" and asked.get(event["verb"]):
                held += event["t"] - asked[event["verb"]].pop(0)
            elif what == "loop_asked":
                loop_asked = event["t"]
            elif what == "loop_started" and loop_asked is not None:
                loop_wait += event["t"] - loop_asked
                loop_started = event["t"]
            elif what == "loop_done" and loop_started is not None:
                loop_run += event["t"] - loop_started
                loop_started = None
            elif what == "child" and event.get("message") == "ready" and ready is None:
                ready = event["t"]
        loops_run += loop_run
        host_ready = first.get("host_ready")
        child_setup = ready - first["child_start"] if ready is not None and "child_start" in first else None
        rows.append((start, job, end - start, host_ready - start if host_ready else None, child_setup,
                     dict(work[job]), held, loop_wait, loop_run))
    rows.sort()
    span = (max(r[0] + r[2] for r in rows) - min(r[0] for r in rows)) if rows else 0.0
    for start, job, life, host, setup, verbs, held, loop_wait, loop_run in rows:
        top = ", ".join(f"{verb} {seconds:.2f}" for verb, seconds in
                        sorted(verbs.items(), key=lambda item: -item[1])[:5])
        print(f"{str(job)[:34]:34} at {start - rows[0][0]:6.1f}  life {life:6.2f}  host ready "
              f"{'-' if host is None else f'{host:5.2f}'}  child set-up {'-' if setup is None else f'{setup:5.2f}'}  "
              f"held {held:5.2f}  loops waited {loop_wait:5.2f} ran {loop_run:5.2f}  host: {top}")
    print(f"span {span:.1f} s; timing loops ran {loops_run:.1f} s (one at a time); "
          f"{len(rows)} jobs (the references' own timings among them)")


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as handle:
        summarise(handle.readlines())
