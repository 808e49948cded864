#!/usr/bin/env python3
"""Harness servers as Slurm job steps (issue 21), on a real one-host cluster that this
script starts and stops (plugins/eval/tests/slurm/cluster.sh: munged, slurmctld, slurmd,
needs root and Debian's slurm-wlm and munge):

  start      what one server's start costs: the time from spawning it to its ready line,
             started here (`python -m kforge_harness serve --device cpu`, launcher local)
             and as a Slurm step (srun ... launcher slurm's command line, outside an
             allocation: a job per server), alternately, --starts times each; the
             launcher's overhead is the difference of the medians. `placed` is when the
             step's first line (its placement) arrived.
  throughput the bundled references pipeline (plugins/eval/tests/data/reference-cpu.yaml,
             63 tasks, the reference as its own candidate, 5 trials) through launcher
             slurm with 1, 2 and 4 servers of one CPU and one request each (stage
             concurrency = servers), and through launcher local with one server of as
             many children, for comparison. jobs/s over the whole run (servers' start
             included) and in steady state (from the first result to the last).

The cluster's node gets --node-cpus CPUs whatever the machine has (4 by default), so 4
servers of one CPU fit on a 2-core machine: beyond the real cores they share them, and
the numbers say what the launcher costs, not what more hardware would give.

    sudo /usr/bin/python3 bench/slurm_pool.py --kforge build/core/kforge
    sudo /usr/bin/python3 bench/slurm_pool.py --kforge build/core/kforge --servers 1 2 --starts 3
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLUSTER = os.path.join(REPO, "plugins", "eval", "tests", "slurm", "cluster.sh")
HARNESS = os.path.join(REPO, "plugins", "eval", "harness")
PIPELINE = os.path.join(REPO, "plugins", "eval", "tests", "data", "reference-cpu.yaml")
# What launcher slurm runs in a step (harness_launcher.cpp): the placement line, then the server.
PLACEMENT = ("printf '{\"slurm_step\": {\"node\": \"%s\", \"job\": \"%s\", \"step\": \"%s\"}}\\n' "
             "\"${SLURMD_NODENAME:-}\" \"${SLURM_JOB_ID:-}\" \"${SLURM_STEP_ID:-}\"; exec \"$@\"")


def server_start(python, slurm):
    """Seconds from spawn to the placement line (slurm) and to the ready line."""
    server = [python, "-m", "kforge_harness", "serve", "--device", "cpu", "--max-children", "1"]
    command = server if not slurm else [
        "srun", "--ntasks=1", "--nodes=1", "--job-name=kforge-harness", "--cpus-per-task=1",
        "--", "/bin/sh", "-c", PLACEMENT, "kforge-harness-step", *server]
    env = dict(os.environ, PYTHONPATH=HARNESS, PYTHONUNBUFFERED="1")
    start = time.perf_counter()
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True)
    placed = None
    for line in process.stdout:
        message = json.loads(line)
        if "slurm_step" in message:
            placed = time.perf_counter() - start
        elif "ready" in message:
            ready = time.perf_counter() - start
            break
    else:
        sys.exit(f"{' '.join(command)}: no ready line")
    process.stdin.close()  # EOF: the server exits, and with it the step
    process.wait(timeout=60)
    return placed, ready


def references_pipeline(work, name, concurrency, params):
    """reference-cpu.yaml's pipeline with the run stage's concurrency and `params`."""
    path = os.path.join(work, name + ".yaml")
    with_params = "".join(f"      {key}: {value}\n" for key, value in params.items())
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"""pipeline: {name}
tasks:
  uses: kernelbench.suite
  with: {{path: {os.path.join(REPO, "examples", "kernelbench-mini")}, profile: small}}
stages:
  - id: run
    uses: eval.run
    with:
      device: cpu
{with_params}    concurrency: {concurrency}
    timeout: 5m
""")
    return path


def run_pipeline(kforge, work, name, concurrency, params):
    """(wall seconds, jobs, first-to-last result seconds) of one references run."""
    out = os.path.join(work, name)
    results = os.path.join(out, "results.jsonl")
    command = [kforge, "run", references_pipeline(work, name, concurrency, params), "--out", out,
               "--progress", "off", "--log-level", "warn", "--no-cache"]
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    first = last = None
    seen = 0
    while process.poll() is None:
        time.sleep(0.05)
        lines = _lines(results)
        if lines > seen:
            now = time.perf_counter()
            first = first or now
            last, seen = now, lines
    stderr = process.stderr.read()
    wall = time.perf_counter() - start
    if process.returncode != 0:
        sys.exit(f"{' '.join(command)} exited {process.returncode}:\n{stderr[-3000:]}")
    seen = _lines(results)
    return wall, seen, (last - first) if first and last and last > first else None


def _lines(path):
    try:
        with open(path, "rb") as f:
            return sum(1 for _ in f)
    except FileNotFoundError:
        return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kforge", default=os.path.join(REPO, "build", "core", "kforge"))
    parser.add_argument("--python", default="/usr/bin/python3", help="an interpreter that imports torch")
    parser.add_argument("--servers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--node-cpus", type=int, default=4)
    args = parser.parse_args()
    kforge = os.path.abspath(args.kforge)
    with tempfile.TemporaryDirectory(prefix="kforge-slurm-bench-") as work:
        os.chmod(work, 0o711)  # munged runs as the munge user
        cluster = os.path.join(work, "cluster")
        started = subprocess.run(["bash", CLUSTER, "start", cluster, str(args.node_cpus)],
                                 capture_output=True, text=True, check=False)
        if started.returncode != 0:
            sys.exit(f"the test cluster did not start ({started.returncode}): {started.stdout}{started.stderr}")
        os.environ["SLURM_CONF"] = os.path.join(cluster, "slurm.conf")
        os.environ["KFORGE_PYTHON"] = args.python
        try:
            local, slurm, placed = [], [], []
            for _ in range(args.starts):
                local.append(server_start(args.python, False)[1])
                at, ready = server_start(args.python, True)
                slurm.append(ready)
                placed.append(at)
            print(f"server start, median of {args.starts} (spawn to ready line):")
            print(f"  local {statistics.median(local):.2f} s   slurm {statistics.median(slurm):.2f} s "
                  f"(placed after {statistics.median(placed):.2f} s)   launcher overhead "
                  f"{statistics.median(slurm) - statistics.median(local):+.2f} s")
            print(f"  local runs: {' '.join(f'{s:.2f}' for s in local)}")
            print(f"  slurm runs: {' '.join(f'{s:.2f}' for s in slurm)}")
            print("references pipeline (63 jobs, --no-cache):")
            print(f"  {'launcher':<8} {'servers':>7} {'children':>8} {'wall':>8} {'jobs/s':>7} {'steady jobs/s':>14}")
            rows = [("local", 1, n) for n in args.servers] + [("slurm", n, 1) for n in args.servers]
            for launcher, servers, children in rows:
                params = {"max_children": children}
                if launcher == "slurm":
                    params.update({"launcher": "slurm", "servers": servers, "cpus_per_server": 1})
                wall, jobs, steady = run_pipeline(kforge, work, f"{launcher}-{servers}x{children}",
                                                  servers * children, params)
                steady_rate = f"{(jobs - 1) / steady:.2f}" if steady else "-"
                print(f"  {launcher:<8} {servers:>7} {children:>8} {wall:>7.1f}s {jobs / wall:>7.2f} {steady_rate:>14}")
        finally:
            subprocess.run(["bash", CLUSTER, "stop", cluster], check=False)


if __name__ == "__main__":
    main()
