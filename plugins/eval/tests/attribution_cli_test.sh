#!/usr/bin/env bash
# End to end through the real CLI (issue 8): who is blamed, admission by memory, and the
# reference computed once per task.
#   1. attribution-cpu.yaml: every task that fails as its own reference (an asserted
#      size, get_inputs raising, a missing import, a None output, a grouped convolution and
#      a windowed attention at sizes that break them, a task bigger than the 2 GiB budget)
#      is a task_error for all four of its good candidates, never a candidate verdict;
#      the good task passes; each task's reference is computed once for its four jobs
#      (--no-cache: identical candidates would otherwise be answered by the verdict
#      cache), except the one too big for the budget, computed again by jobs that ran out
#      of memory beside others before it was known to be too big (at most 2 at a time);
#   2. oom-retry-cpu.yaml: an out-of-memory beside another job is retried with the device
#      to itself and passes; one too big for the device alone is the candidate's. Which
#      jobs shared the device depends on the schedule: whatever it was, the greedy
#      candidates pass (alone, or retried alone once), the huge one fails as
#      out_of_memory, and no job is retried more than once.
# Usage: attribution_cli_test.sh KFORGE REPO. Exit 77 (skipped) without a Python with torch.
set -euo pipefail
kforge=$1 repo=$2
source "$repo/tests/lib/torch_python.sh"
data=$repo/plugins/eval/tests/data
cands=$repo/plugins/eval/harness/tests/data/candidates
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Candidates named as kernelbench.candidate_files expects: <task file>, then <stem>.N.py.
mkdir -p "$work/good" "$work/oom"
for task in relu broken_asserts_size broken_get_inputs broken_import broken_none_output \
            grouped_conv windowed_attention too_big; do
  cp "$cands/python_relu.py" "$work/good/$task.py"
  for n in 1 2 3; do cp "$cands/python_relu.py" "$work/good/$task.$n.py"; done
done
cp "$cands/python_relu.py" "$work/oom/relu.py"
cp "$cands/greedy_relu.py" "$work/oom/relu.1.py"
cp "$cands/greedy_relu.py" "$work/oom/relu.2.py"
cp "$cands/huge_alloc_torch.py" "$work/oom/relu.3.py"  # a python candidate: no kforge_cpp

for run in attribution:good oom-retry:oom; do
  name=${run%%:*} dir=${run##*:}
  "$kforge" run "$data/$name-cpu.yaml" --set candidates="$work/$dir" --out "$work/$name" \
    --no-cache --progress off --log-level warn >"$work/$name.log" 2>&1 || true  # task errors make the exit status non-zero
  [[ -s $work/$name/results.jsonl ]] || { cat "$work/$name.log"; exit 1; }
done

"$python" - "$work" <<'PY'
import collections, json, os, sys
work = sys.argv[1]

def results(name):
    with open(os.path.join(work, name, "results.jsonl")) as f:
        return [json.loads(line) for line in f]

def run_metrics(job):
    return job["stages"][-1].get("metrics", {})

jobs = results("attribution")
by_task = collections.defaultdict(list)
for job in jobs:
    by_task[job["task"]].append(job)
problems = []
assert len(jobs) == 32, f"{len(jobs)} jobs, expected 8 tasks x 4"
for task, group in sorted(by_task.items()):
    verdicts = {(j["status"], j["error_class"]) for j in group}
    want = {("pass", "")} if task == "relu" else {("error", "task_error")}
    if verdicts != want:
        problems.append(f"{task}: {verdicts} ({group[0]['message'][:200]})")
    computed = sum(run_metrics(j).get("reference_computed", 0) for j in group)
    if not (computed == 1 or (task == "too_big" and 1 <= computed <= 2)):
        problems.append(f"{task}: reference computed {computed} times for {len(group)} candidates")
    print(f"{task:22} {sorted(verdicts)[0][1] or 'pass':12} reference computed {computed}x for "
          f"{len(group)} candidates: {group[0]['message'][:90]}")
too_big = by_task["too_big"][0]["message"]
if "needs" not in too_big or "2.00 GiB" not in too_big:
    problems.append(f"too_big does not say what it needs and what the budget is: {too_big}")

oom = sorted(results("oom-retry"), key=lambda j: j["sample"])
got = [(j["sample"], j["status"], j["error_class"], run_metrics(j).get("retried_alone", 0)) for j in oom]
print("oom-retry:", got)
if [g[1:3] for g in got] != [("pass", ""), ("pass", ""), ("pass", ""), ("fail", "out_of_memory")]:
    problems.append(f"oom-retry verdicts: {got}")
if any(g[3] not in (0, 1) for g in got):
    problems.append(f"a job was retried more than once: {got}")
assert not problems, "\n".join(problems)
print("attribution, admission and reference reuse through the CLI: as expected")
PY
