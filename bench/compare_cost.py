#!/usr/bin/env python3
"""What the judge's comparison costs per MB of output on the CPU, and what the
whole-output statistics (issue 12: rel_l2_error, share_over_coarse, max/mean relative
error) add: the same comparison timed with this harness's compare.py and with a
baseline harness's (e.g. main's before the statistics), each in a fresh process, on the
same float32 outputs held in memory (no file reading: the arithmetic alone). CPU time is
reported beside wall time: on a loaded machine it is the steadier of the two.

    /usr/bin/python3 bench/compare_cost.py --baseline-harness /work/main/plugins/eval/harness
    /usr/bin/python3 bench/compare_cost.py --mb 64 256 --repeats 5
"""

import argparse
import json
import os
import subprocess
import sys

HARNESS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                           "plugins", "eval", "harness")

# Runs in the measured process: compare_tensors on an output of `mb` MB against a copy
# that differs by fp32-sized noise, `repeats` times; prints the median seconds.
MEASURE = r"""
import json, statistics, sys, time
import torch
from kforge_harness import compare, protocol
mb, repeats, threads = float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
torch.set_num_threads(threads)
torch.manual_seed(0)
ref = torch.randn(int(mb * (1 << 20)) // 4)
cand = ref + torch.randn(ref.numel()) * 1e-7
rule = protocol.normalise_request({"id": 1, "action": "check", "candidate": {"code": ""}})["options"]["rule"]
compare.compare_tensors(ref[:1 << 20], cand[:1 << 20], rule)  # loads the kernels
times, cpu = [], []
for _ in range(repeats):
    start, start_cpu = time.perf_counter(), time.process_time()
    outcome = compare.compare_tensors(ref, cand, rule)
    times.append(time.perf_counter() - start)
    cpu.append(time.process_time() - start_cpu)
print(json.dumps({"seconds": statistics.median(times), "cpu": statistics.median(cpu), "passed": outcome.passed,
                  "metrics": sorted(getattr(outcome, "metrics", {}) or {})}))
"""


def measure(harness, mb, repeats, threads):
    env = dict(os.environ, PYTHONPATH=harness)
    out = subprocess.run([sys.executable, "-c", MEASURE, str(mb), str(repeats), str(threads)],
                         env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline-harness", help="a harness directory to compare with")
    parser.add_argument("--mb", type=float, nargs="+", default=[64.0, 256.0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (a judge has cores/max_children)")
    args = parser.parse_args()
    sides = [("this harness", HARNESS_DIR)]
    if args.baseline_harness:
        sides.append(("baseline", args.baseline_harness))
    print(f"comparison of a float32 output with a noisy copy, in memory, {args.threads} thread(s), "
          f"median of {args.repeats}")
    for mb in args.mb:
        rows = {name: measure(harness, mb, args.repeats, args.threads) for name, harness in sides}
        line = f"{mb:6.0f} MB:"
        for name, row in rows.items():
            line += (f"  {name}: wall {row['seconds'] * 1000 / mb:6.2f} ms/MB, "
                     f"CPU {row['cpu'] * 1000 / mb:6.2f} ms/MB")
        if len(rows) == 2:
            extra = (rows["this harness"]["cpu"] - rows["baseline"]["cpu"]) * 1000 / mb
            line += f"  (extra CPU {extra:+.2f} ms/MB)"
        print(line, flush=True)


if __name__ == "__main__":
    main()
