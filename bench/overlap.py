#!/usr/bin/env python3
"""Do generation and evaluation overlap? The default pipeline (pipelines/default.yaml: 20
tasks x 2 candidates, fix rounds, L1/L2/L3 on the CPU) with every LLM answer taking D
seconds, against the two bounds it cannot beat:

  evaluation-bound  the same run with answers at once (D = 0): evaluation alone;
  LLM-bound         the LLM calls alone: the longest chain of calls one job made
                    (generate, then each fix) x D, or all calls through the generate and
                    fix stages' slots (16 each) x D, whichever is longer.

ratio = wall(D) / max(evaluation-bound, LLM-bound): 1.00 is perfect overlap. The answers
are the recorded ones of pipelines/cassettes/default.jsonl, each replayed after exactly D
seconds (a copy of the cassette with every duration_s = D, latency_scale 1), so every run
makes the same calls and the same verdicts. Each configuration runs --repeats times after
one untimed warm-up run (the compile cache and the page cache warm); medians are printed.
Several builds (--kforge A B) run in turn, configuration by configuration, so that a
machine's drift falls on each alike.

    /usr/bin/python3 bench/overlap.py --kforge build/core/kforge
    /usr/bin/python3 bench/overlap.py --kforge old/bin/kforge build/core/kforge --delays 0.5 2 --repeats 3
"""

import argparse
import json
import math
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PIPELINE = os.path.join(REPO, "pipelines", "default.yaml")
CASSETTE = os.path.join(REPO, "pipelines", "cassettes", "default.jsonl")
SLOTS = 16  # concurrency of the generate and fix stages in pipelines/default.yaml


def delayed_cassette(directory, delay):
    path = os.path.join(directory, f"cassette-{delay:g}s.jsonl")
    with open(CASSETTE, encoding="utf-8") as source, open(path, "w", encoding="utf-8") as copy:
        for line in source:
            if line.strip():
                entry = json.loads(line)
                entry["duration_s"] = delay
                copy.write(json.dumps(entry) + "\n")
    return path


def run(kforge, work, delay, name):
    """Wall seconds of one run of the default pipeline with answers after `delay` s."""
    out = os.path.join(work, name)
    command = [kforge, "run", PIPELINE, "--out", out, "--progress", "off", "--log-level", "warn",
               "--set", f"cassette={delayed_cassette(work, delay)}",
               "--set", f"generate.latency_scale={1 if delay > 0 else 0}",
               "--set", f"fix.latency_scale={1 if delay > 0 else 0}"]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} exited {done.returncode}:\n{done.stderr[-3000:]}")
    return wall, out


def llm_calls(out):
    """LLM calls per job (generate and fix visits), from the run's store."""
    db = sqlite3.connect(f"file:{os.path.join(out, 'kforge.db')}?mode=ro", uri=True)
    rows = db.execute("SELECT task_id, sample, stage, COUNT(*) FROM attempts "
                      "WHERE stage IN ('generate', 'fix') GROUP BY task_id, sample, stage").fetchall()
    per_job, per_stage = {}, {}
    for task, sample, stage, count in rows:
        per_job[(task, sample)] = per_job.get((task, sample), 0) + count
        per_stage[stage] = per_stage.get(stage, 0) + count
    return per_job, per_stage


def llm_bound(out, delay):
    per_job, per_stage = llm_calls(out)
    chain = max(per_job.values()) * delay
    through_slots = max(math.ceil(calls / SLOTS) for calls in per_stage.values()) * delay
    return max(chain, through_slots)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kforge", nargs="+", default=[os.path.join(REPO, "build", "core", "kforge")],
                        help="one or more kforge binaries (builds to compare), run in turn")
    parser.add_argument("--delays", type=float, nargs="+", default=[0.5, 2.0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    names = [f"{i}:{path}" for i, path in enumerate(args.kforge)]
    walls = {(k, d): [] for k in names for d in [0.0, *args.delays]}
    llm = {}
    with tempfile.TemporaryDirectory(prefix="kforge-overlap-") as work:
        for name, kforge in zip(names, args.kforge):
            run(kforge, work, 0, f"warm-up-{name[0]}")
        # Builds and delays in turn, so that the machine's drift falls on all of them alike.
        for i in range(args.repeats):
            for name, kforge in zip(names, args.kforge):
                for delay in [0.0, *args.delays]:
                    wall, out = run(kforge, work, delay, f"{name[0]}-d{delay:g}-{i}")
                    walls[(name, delay)].append(wall)
                    print(f"run {i + 1}/{args.repeats} {name} delay {delay:g} s: {wall:.2f} s", file=sys.stderr, flush=True)
                    if delay > 0:
                        llm[(name, delay)] = llm_bound(out, delay)
        for name in names:
            bound = statistics.median(walls[(name, 0.0)])
            print(f"{name}")
            print(f"  evaluation-bound (answers at once): {bound:.2f} s (median of {args.repeats}: "
                  + " ".join(f"{w:.2f}" for w in walls[(name, 0.0)]) + ")")
            print(f"  {'delay':>6} {'wall':>8} {'LLM-bound':>10} {'ratio':>6}  runs")
            for delay in args.delays:
                wall = statistics.median(walls[(name, delay)])
                ratio = wall / max(bound, llm[(name, delay)])
                print(f"  {delay:>5g}s {wall:>7.2f}s {llm[(name, delay)]:>9.2f}s {ratio:>6.3f}  "
                      + " ".join(f"{w:.2f}" for w in walls[(name, delay)]))


if __name__ == "__main__":
    main()
