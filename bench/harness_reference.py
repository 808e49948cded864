#!/usr/bin/env python3
"""What the trusted reference service costs and saves (issue 8), on the CPU or a GPU.

  units     k candidates of one task through one harness server: how many reference
            computations ran (metric reference_computed) and how many device units
            (reference or candidate forward passes over all trials) that makes per task,
            against 2k for a harness that runs the reference beside every candidate; the
            wall time of the k requests. With --baseline-harness (a checkout's
            plugins/eval/harness, e.g. main's) the same requests through that harness too.
  compare   peak memory of comparing one output of --gb GB with a copy of itself: the
            comparison of --baseline-harness (whole-output float64 temporaries on the
            output's device) against this harness's judge (outputs written to files, read
            back and compared in chunks on the CPU). Each side runs in a fresh process;
            the peak is the growth of the device allocator's peak (GPU) or of the resident
            set (CPU) over what the outputs themselves take.

    /usr/bin/python3 bench/harness_reference.py units --baseline-harness OTHER_CHECKOUT/plugins/eval/harness
    /usr/bin/python3 bench/harness_reference.py compare --gb 0.5 --baseline-harness OTHER_CHECKOUT/plugins/eval/harness
    python3 bench/harness_reference.py compare --device cuda:0 --gb 6 --baseline-harness MAIN/plugins/eval/harness
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HARNESS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                           "plugins", "eval", "harness")
sys.path.insert(0, HARNESS_DIR)
from tests import client  # noqa: E402 - the harness tests' protocol client


def units(args):
    sides = [("this harness", HARNESS_DIR)]
    if args.baseline_harness:
        sides.append(("baseline", args.baseline_harness))
    print(f"units: task relu {args.rows}x{args.cols} float32 (tests/data/tasks/relu.py), "
          f"{args.trials} trials, device {args.device}, {args.max_children} children")
    print(f"{'harness':14} {'k':>3} {'ref computed':>13} {'units':>6} {'2k':>4} {'wall s':>8} {'s/candidate':>12}")
    for k in args.k:
        for name, harness_dir in sides:
            harness = client.Server(device=args.device, max_children=args.max_children,
                                    python=args.python, harness_dir=harness_dir)
            requests = [client.request(str(i), "run", "relu", "python_relu", language="python",
                                       sizes={"batch_size": args.rows, "dim": args.cols},
                                       options={"trials": args.trials},
                                       limits={"timeout_s": 600}) for i in range(k)]
            started = time.monotonic()
            responses = list(harness.ask(*requests, timeout=1800).values())
            wall = time.monotonic() - started
            harness.close()
            bad = [r for r in responses if r["status"] != "pass"]
            if bad:
                raise SystemExit(f"{name}: not every candidate passed: {bad[0]}")
            if name == "baseline":  # it runs the reference beside every candidate
                computed = k
            else:
                computed = sum(r["metrics"].get("reference_computed", 0) for r in responses)
            print(f"{name:14} {k:>3} {computed:>13g} {computed + k:>6g} {2 * k:>4} {wall:>8.2f} {wall / k:>12.3f}")


MEASURE = r'''
import json, os, sys, time
sys.path.insert(0, sys.argv[1])
import torch
side, device, numel, directory = sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]

def rss():
    with open("/proc/self/status") as status:
        fields = dict(line.split(":", 1) for line in status)
    return int(fields["VmRSS"].split()[0]) * 1024, int(fields["VmHWM"].split()[0]) * 1024

def reset_peak():
    with open("/proc/self/clear_refs", "w") as handle:
        handle.write("5")

from kforge_harness import protocol
rule = protocol.DEFAULT_RULE
if side == "baseline":
    from kforge_harness.compare import compare_outputs
    torch.manual_seed(0)
    ref = torch.randn(numel, device=device)
    cand = ref.clone()
    if device != "cpu":
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
    reset_peak()
    rss_base = rss()[0]
    started = time.monotonic()
    outcome = compare_outputs([ref], [cand], rule)
    seconds = time.monotonic() - started
    peak = (torch.cuda.max_memory_allocated() - base) if device != "cpu" else rss()[1] - rss_base
    host_peak = rss()[1] - rss_base
else:
    from kforge_harness import compare, outputs
    info = json.load(open(os.path.join(directory, "info.json")))
    reset_peak()
    rss_base = rss()[0]
    started = time.monotonic()
    ref = [outputs.FileLeaf(directory, "ref", 0, info)]
    cand = [outputs.FileLeaf(directory, "cand", 0, info)]
    outcome = compare.compare_leaves(ref, cand, rule)
    seconds = time.monotonic() - started
    peak = host_peak = rss()[1] - rss_base
print(json.dumps({"passed": outcome.passed, "peak_bytes": peak, "host_peak_bytes": host_peak,
                  "seconds": seconds}))
'''

WRITE = r'''
import json, os, sys, time
sys.path.insert(0, sys.argv[1])
import torch
device, numel, directory = sys.argv[2], int(sys.argv[3]), sys.argv[4]
from kforge_harness import outputs
torch.manual_seed(0)
value = torch.randn(numel, device=device)
started = time.monotonic()
for prefix in ("ref", "cand"):
    info = outputs.write_leaves([value], directory, prefix)[0]
print(json.dumps({"seconds_per_output": (time.monotonic() - started) / 2}))
json.dump(info, open(os.path.join(directory, "info.json"), "w"))
'''


def run_python(args, code, *argv):
    done = subprocess.run([args.python, "-c", code, *argv], capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        raise SystemExit(f"measurement failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def compare_memory(args):
    numel = int(args.gb * (1 << 30) / 4)
    scratch = "/dev/shm" if os.path.isdir("/dev/shm") else None
    directory = tempfile.mkdtemp(prefix="kforge-bench-compare-", dir=scratch)
    print(f"compare: one float32 output of {args.gb:g} GB ({numel} elements) against a copy, "
          f"device {args.device}")
    rows = []
    if args.baseline_harness:
        result = run_python(args, MEASURE, args.baseline_harness, "baseline", args.device, str(numel), directory)
        rows.append(("baseline (whole-output float64 on the device)", result))
    written = run_python(args, WRITE, HARNESS_DIR, args.device, str(numel), directory)
    result = run_python(args, MEASURE, HARNESS_DIR, "judge", args.device, str(numel), directory)
    rows.append(("this harness's judge (files, chunks, CPU)", result))
    for name in os.listdir(directory):
        os.unlink(os.path.join(directory, name))
    os.rmdir(directory)
    print(f"handing one output over (device -> file): {written['seconds_per_output']:.2f} s")
    print(f"{'comparison':48} {'verdict':>8} {'peak GB':>8} {'host peak GB':>13} {'seconds':>8}")
    for name, result in rows:
        print(f"{name:48} {'pass' if result['passed'] else 'FAIL':>8} "
              f"{result['peak_bytes'] / 2**30:>8.3f} {result['host_peak_bytes'] / 2**30:>13.3f} "
              f"{result['seconds']:>8.2f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    for name in ("units", "compare"):
        sub = commands.add_parser(name)
        sub.add_argument("--device", default="cpu")
        sub.add_argument("--python", default=sys.executable)
        sub.add_argument("--baseline-harness", help="another checkout's plugins/eval/harness to compare with")
    units_parser = commands.choices["units"]
    units_parser.add_argument("--k", type=int, nargs="+", default=[1, 4, 8])
    units_parser.add_argument("--rows", type=int, default=256)
    units_parser.add_argument("--cols", type=int, default=4096)
    units_parser.add_argument("--trials", type=int, default=5)
    units_parser.add_argument("--max-children", type=int, default=2)
    commands.choices["compare"].add_argument("--gb", type=float, default=0.5)
    args = parser.parse_args()
    return units(args) if args.command == "units" else compare_memory(args)


if __name__ == "__main__":
    sys.exit(main())
