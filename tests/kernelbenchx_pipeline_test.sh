#!/usr/bin/env bash
# End to end through the real CLI: pipelines/kernelbenchx.yaml on the CPU with Python
# candidates (issue 13 item 2). Each task of plugins/eval/harness/tests/data/tasks/kbx has
# two candidates in plugins/eval/tests/data/kbx-candidates: sample 0 is correct, sample 1
# names in its first line the error class it must end in. Checks every verdict, and the
# KernelBenchX rates per category that the kernelbench plugin's report section adds
# (report.json's "tables" and the text table).
# Usage: kernelbenchx_pipeline_test.sh KFORGE REPO. Exit 77 (skipped) without a Python with torch.
set -euo pipefail
kforge=$1 repo=$2
source "$repo/tests/lib/torch_python.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
candidates=$repo/plugins/eval/tests/data/kbx-candidates

"$kforge" run "$repo/pipelines/kernelbenchx.yaml" --out "$work/out" --progress off --log-level warn \
  --set device=cpu --set language=python --set candidates="$candidates" --set k=2 \
  --report-format text,json >"$work/run.log" 2>&1 || { cat "$work/run.log"; exit 1; }

"$python" - "$work" "$candidates" <<'PY'
import json, os, re, sys
work, candidates = sys.argv[1], sys.argv[2]
with open(os.path.join(work, "out", "results.jsonl")) as f:
    results = [json.loads(line) for line in f]
assert len(results) == 10, f"{len(results)} jobs, expected 5 tasks x 2 samples"
failures = []
for r in results:
    want = ("pass", "")
    if r["sample"] == 1:
        first = open(os.path.join(candidates, f"{r['task']}.1.py")).readline()
        want = ("fail", re.match(r"# expect: (\S+)", first).group(1))
    got = (r["status"], r["error_class"])
    print(f"{r['task']:18} sample {r['sample']}: {got[0]:5} {got[1]:20} {r.get('message', '')[:90]}")
    if got != want:
        failures.append(f"{r['task']} sample {r['sample']}: expected {want}, got {got}")
assert not failures, "\n".join(failures)

# describe_dtype's test calls the function on constants only: correct, but not timed
# (a candidate could answer them from a table; the harness README, "Timing").
described = next(r for r in results if r["task"] == "describe_dtype" and r["sample"] == 0)
assert "speedup" not in described["stages"][-1]["metrics"], described

report = json.load(open(os.path.join(work, "out", "report.json")))
# The kernelbench plugin's report section adds the table; report.json carries its numbers.
sections = [t for t in report["tables"] if t["section"] == "kernelbench.categories"]
assert len(sections) == 1, report["tables"]
assert sections[0]["plugin"] == "kernelbench" and sections[0]["title"] == "KernelBenchX rates by category", sections
rates = {row["name"]: row for row in sections[0]["data"]}
share = lambda s: (s["count"], s["total"])
# Activation: leaky_relu, scale_shift_fp16, describe_dtype; describe_dtype.1 never ran (L1).
# (called, correct, timed)
expected = {"Activation": ((5, 6), (3, 6), 2), "MatrixMultiply": ((1, 2), (1, 2), 1),
            "Reduce": ((2, 2), (1, 2), 1)}
for name, (called, correct, timed) in expected.items():
    row = rates[name]
    assert (share(row["called"]), share(row["correct"])) == (called, correct), (name, row)
    assert share(row["faster"])[1] == timed, (name, row)
    assert row["mean_speedup"] is not None and row["mean_speedup"] > 0, (name, row)
assert set(rates) == set(expected), rates
print("category rates:", {n: (share(r["called"]), share(r["correct"])) for n, r in rates.items()})
PY
grep -q "KernelBenchX rates by category" "$work/run.log" || { echo "the text report lacks the rates table"; cat "$work/run.log"; exit 1; }
# Why it was not timed is in its verdict's log.
"$kforge" show "$work/out" describe_dtype >"$work/show.txt" 2>&1
grep -q "harness: not timed: no call of the function by the task's test code can be timed" "$work/show.txt" ||
  { echo "kforge show lacks why describe_dtype was not timed"; cat "$work/show.txt"; exit 1; }
