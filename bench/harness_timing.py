#!/usr/bin/env python3
"""What the timing's guards (issue 12: input pools, spot checks, the server's brackets,
the thread count, confirmation) cost per candidate, on the CPU or a GPU.

Bundled tasks of examples/kernelbench-mini with their candidates (cpp on the CPU, triton
on a GPU) through one harness server, with timing (warm-up 3, 20 timed calls: the
defaults) and without. Each runs --repeat times after a first request that computes and
stores the reference (outputs and timing), so what is measured is the candidate's own
request: its `child_seconds` (the median over the repeats); what timing costs is the
difference between the two, and for this harness also its metric `timing_seconds` (the
server's time from the first timed loop to the verdict: less noisy on a loaded host). With --baseline-harness (a checkout's plugins/eval/harness,
e.g. main's, whose timing has none of the guards) the same through that harness too.

    /usr/bin/python3 bench/harness_timing.py --baseline-harness OTHER_CHECKOUT/plugins/eval/harness
    python3 bench/harness_timing.py --device cuda:0 --profile full --language triton \\
        --baseline-harness MAIN/plugins/eval/harness
"""

import argparse
import os
import statistics
import sys

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HARNESS_DIR = os.path.join(REPO, "plugins", "eval", "harness")
SUITE = os.path.join(REPO, "examples", "kernelbench-mini")
sys.path.insert(0, HARNESS_DIR)
from tests import client  # noqa: E402 - the harness tests' protocol client


def suite_task(task_id, profile):
    with open(os.path.join(SUITE, "manifest.yaml"), encoding="utf-8") as handle:
        for entry in yaml.safe_load(handle)["tasks"]:
            if os.path.basename(entry["file"])[:-3] == task_id:
                return {"path": os.path.join(SUITE, entry["file"]),
                        "sizes": (entry.get("sizes") or {}).get(profile, {})}
    raise SystemExit(f"no task {task_id} in the suite")


def run_side(harness_dir, args):
    server = client.Server(device=args.device, max_children=1, python=args.python,
                           harness_dir=harness_dir)
    seconds = {}
    loops = {}  # task -> the guarded harness's timing_seconds
    try:
        for task_id in args.tasks:
            with open(os.path.join(SUITE, "candidates", args.language, task_id + ".py"),
                      encoding="utf-8") as handle:
                code = handle.read()
            for timed in (True, False):
                request = {"action": "run", "task": suite_task(task_id, args.profile),
                           "candidate": {"code": code, "language": args.language},
                           "options": {"timing": {"enabled": timed}}, "limits": {"timeout_s": 600}}
                times = []
                for index in range(args.repeat + 1):
                    response = server.ask(dict(request, id=str(index)), timeout=1800)[str(index)]
                    if response["status"] != "pass":
                        raise SystemExit(f"{harness_dir}: {task_id} did not pass: "
                                         f"{response['message']}")
                    if index:  # the first request also computed the reference
                        times.append(response["metrics"]["child_seconds"])
                        if timed and "timing_seconds" in response["metrics"]:
                            loops.setdefault(task_id, []).append(response["metrics"]["timing_seconds"])
                seconds[task_id, timed] = statistics.median(times)
        for task_id, values in loops.items():
            seconds[task_id, "loop"] = statistics.median(values)
    finally:
        server.close()
    return seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--profile", default="small", choices=("small", "full"))
    parser.add_argument("--language", default="cpp", choices=("cpp", "triton", "cuda"))
    parser.add_argument("--tasks", nargs="+",
                        default=["001_relu", "019_softmax", "032_square_matmul", "043_conv2d"])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--baseline-harness")
    args = parser.parse_args()
    guarded = run_side(HARNESS_DIR, args)
    baseline = run_side(args.baseline_harness, args) if args.baseline_harness else {}
    print(f"candidate request seconds (median of {args.repeat}), device {args.device}, "
          f"profile {args.profile}, {args.language} candidates, timing 3 + 20 calls")
    print(f"{'task':22} {'harness':9} {'untimed s':>10} {'timed s':>8} {'timing s':>9} "
          f"{'timing_seconds':>15}")
    for task_id in args.tasks:
        for name, seconds in (("guarded", guarded), ("baseline", baseline)):
            if seconds:
                untimed, timed = seconds[task_id, False], seconds[task_id, True]
                loop = seconds.get((task_id, "loop"))
                loop_text = f"{loop:15.2f}" if loop is not None else f"{'-':>15}"
                print(f"{task_id:22} {name:9} {untimed:10.2f} {timed:8.2f} "
                      f"{timed - untimed:9.2f} {loop_text}")


if __name__ == "__main__":
    main()
