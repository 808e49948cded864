#!/usr/bin/env python3
"""The size fitter on a whole KernelBench checkout: fit every task to a memory budget,
then run each task's reference at the fitted sizes for real, as its own candidate,
through the harness (a `run` request: reference and "candidate" built with the same
weights, fed the same inputs, outputs compared: twice per trial), and report.

    nice -n 10 /usr/bin/python3 bench/fit_kernelbench.py /path/to/KernelBench \
        --budget-mb 256 --out fit.jsonl

KERNELBENCH_DIR holds level1/, level2/, level3/ (or is one level's folder). The files
are read where they are, never copied. One line of JSON per task goes to --out; a summary
(counts, fit time median/max, total; with --compare, the tasks whose sizes differ from an
earlier run's) is printed at the end. Fitting runs in this process,
as the harness's reference worker would run it; the run requests go to a harness server
(fork mode, one child at a time) on the same device.
"""

import argparse
import glob
import json
import os
import statistics
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HARNESS_DIR = os.path.join(REPO, "plugins", "eval", "harness")
sys.path.insert(0, HARNESS_DIR)

from kforge_harness.tasks import fit as fitter  # noqa: E402
from tests.client import Server  # noqa: E402


def task_files(root):
    levels = sorted(glob.glob(os.path.join(root, "level*")))
    dirs = levels or [root]
    files = []
    for directory in dirs:
        names = [n for n in os.listdir(directory) if n.endswith(".py") and n != "__init__.py"]
        names.sort(key=lambda n: (int(n.split("_")[0]) if n.split("_")[0].isdigit() else 1 << 30, n))
        files += [os.path.join(directory, n) for n in names]
    return files


def fit_one(path, args):
    row = {"task": os.path.relpath(path, args.kernelbench)}
    started = time.monotonic()
    try:
        result = fitter.fit(path, budget_mb=args.budget_mb, device=args.device,
                            max_forward_s=args.max_forward_s)
    except fitter.TaskBroken as exc:
        row.update(fit="task_broken", missing_module=exc.missing_module, message=str(exc))
    except fitter.CannotFit as exc:
        row.update(fit="cannot_fit", smallest_peak_mb=exc.smallest_peak_mb, message=str(exc))
    else:
        row.update(fit="ok", **result.to_json())
    row["fit_s"] = time.monotonic() - started
    return row


def run_request(row, path, args, server):
    """The reference as its own candidate at the fitted sizes: pass means it runs and
    gives the same outputs twice per trial."""
    request = {"id": row["task"], "action": "run",
               "task": {"path": path, "sizes": row["sizes"], "size_scale": 1.0},
               "candidate": {"code": None, "language": "python"},
               "options": {"trials": args.trials,
                           "timing": {"enabled": args.timing}},
               "limits": {"timeout_s": args.timeout_s}}
    started = time.monotonic()
    response = server.ask(request, timeout=args.timeout_s + 60)[row["task"]]
    row.update(run_status=response["status"], run_error_class=response["error_class"],
               run_message=response["message"][:500], run_s=time.monotonic() - started)


def summarise(rows):
    fitted = [r for r in rows if r["fit"] == "ok"]
    passed = [r for r in fitted if r.get("run_status") == "pass"]
    broken = [r for r in rows if r["fit"] == "task_broken"]
    missing = [r for r in broken if r.get("missing_module")]
    cannot = [r for r in rows if r["fit"] == "cannot_fit"]
    fit_times = [r["fit_s"] for r in rows]
    print(f"tasks: {len(rows)}")
    print(f"fitted: {len(fitted)}; their reference passes at the fitted sizes: {len(passed)}")
    for r in fitted:
        if r.get("run_status") not in (None, "pass"):
            print(f"  run {r['run_status']} {r['run_error_class']}: {r['task']}: {r['run_message'][:300]}")
    print(f"cannot fit: {len(cannot)}")
    for r in cannot:
        print(f"  {r['task']}: {r['message'][:400]}")
    print(f"task broken: {len(broken)} (missing modules: {len(missing)})")
    for r in broken:
        print(f"  {r['task']}: {r['message'][:300]}")
    if fit_times:
        print(f"fit time per task: median {statistics.median(fit_times):.2f} s, "
              f"max {max(fit_times):.2f} s ({max(rows, key=lambda r: r['fit_s'])['task']}), "
              f"total {sum(fit_times):.0f} s")
    peaks = [r["peak_mb"] for r in fitted]
    if peaks:
        print(f"measured peak at fitted sizes: median {statistics.median(peaks):.1f} MB, "
              f"max {max(peaks):.1f} MB")
    run_times = [r["run_s"] for r in fitted if "run_s" in r]
    if run_times:
        print(f"self-test (run request) per task: median {statistics.median(run_times):.2f} s, "
              f"max {max(run_times):.2f} s, total {sum(run_times):.0f} s")


def compare(rows, previous_path):
    """Determinism: the sizes of this run against an earlier run's --out file."""
    with open(previous_path, encoding="utf-8") as handle:
        previous = {r["task"]: r for r in map(json.loads, handle)}
    same, differ = 0, []
    for row in rows:
        before = previous.get(row["task"])
        if before is None:
            continue
        if (row["fit"], row.get("sizes")) == (before["fit"], before.get("sizes")):
            same += 1
        else:
            differ.append(row["task"])
    print(f"same outcome and sizes as {previous_path}: {same} of {same + len(differ)}")
    for task in differ:
        print(f"  differs: {task}: {previous[task].get('sizes')} -> "
              f"{next(r for r in rows if r['task'] == task).get('sizes')}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kernelbench", help="KernelBench directory (level1/ level2/ level3/)")
    parser.add_argument("--budget-mb", type=float, default=256)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--max-forward-s", type=float, default=None)
    parser.add_argument("--include", default="", help="substring a task's path must contain")
    parser.add_argument("--trials", type=int, default=1,
                        help="correctness trials: each runs the reference twice and compares")
    parser.add_argument("--timing", action="store_true", help="also time reference and candidate")
    parser.add_argument("--timeout-s", type=float, default=300)
    parser.add_argument("--fit-only", action="store_true", help="skip the run requests")
    parser.add_argument("--out", default="", help="one JSON line per task")
    parser.add_argument("--compare", default="",
                        help="an earlier run's --out file: report tasks whose sizes differ")
    args = parser.parse_args()
    files = [f for f in task_files(args.kernelbench) if args.include in f]
    server = None if args.fit_only else Server(device=args.device, max_children=1)
    out = open(args.out, "w", encoding="utf-8") if args.out else None
    rows = []
    started = time.monotonic()
    try:
        for path in files:
            row = fit_one(path, args)
            if server is not None and row["fit"] == "ok":
                run_request(row, path, args, server)
            rows.append(row)
            print(json.dumps({k: row.get(k) for k in ("task", "fit", "changes", "peak_mb",
                                                       "forward_s", "fit_s", "run_status",
                                                       "run_error_class", "run_s")}),
                  flush=True)
            if out:
                out.write(json.dumps(row) + "\n")
                out.flush()
    finally:
        if server is not None:
            server.close()
        if out:
            out.close()
    summarise(rows)
    if args.compare:
        compare(rows, args.compare)
    print(f"total wall time: {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
