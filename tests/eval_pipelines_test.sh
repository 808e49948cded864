#!/usr/bin/env bash
# End to end through the real CLI on the bundled suite (issue 3):
#   1. the reference of every bundled task, run as its own candidate, passes;
#   2. every broken C++ candidate lands in the class its first line names
#      (`# expect: CLASS`), all in one pipeline run that survives them all.
# Usage: eval_pipelines_test.sh KFORGE REPO. Exit 77 (skipped) without a Python with torch.
set -euo pipefail
kforge=$1 repo=$2
source "$repo/tests/lib/torch_python.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$kforge" run "$repo/plugins/eval/tests/data/reference-cpu.yaml" --out "$work/reference" \
  --progress off --log-level warn >"$work/reference.log" 2>&1 || { cat "$work/reference.log"; exit 1; }
"$kforge" run "$repo/plugins/eval/tests/data/broken-cpu.yaml" --out "$work/broken" \
  --progress off --log-level warn >"$work/broken.log" 2>&1 || { cat "$work/broken.log"; exit 1; }

"$python" - "$repo" "$work" <<'PY'
import json, os, re, sys
repo, work = sys.argv[1], sys.argv[2]

def results(name):
    with open(os.path.join(work, name, "results.jsonl")) as f:
        return [json.loads(line) for line in f]

manifest = open(os.path.join(repo, "examples/kernelbench-mini/manifest.yaml")).read()
tasks = len(re.findall(r"^  - file: ", manifest, re.M))
reference = results("reference")
def expected_class(task_id):
    """`# expect: CLASS` on a task file's first line (027: task_error), else pass."""
    path = os.path.join(repo, "examples/kernelbench-mini/tasks", task_id + ".py")
    found = re.match(r"# expect: (\S+)", open(path).readline())
    return found.group(1) if found else "pass"
bad = [(r["task"], r["error_class"], r["message"][:200]) for r in reference
       if (r["status"] if r["status"] == "pass" else r["error_class"]) != expected_class(r["task"])]
assert len(reference) == tasks, f"{len(reference)} reference jobs for {tasks} tasks"
assert not bad, f"references that did not pass as their own candidate: {bad}"
print(f"reference as candidate: {len(reference)}/{tasks} pass")

broken_dir = os.path.join(repo, "examples/kernelbench-mini/candidates/broken")
expected = {}
for name in sorted(os.listdir(broken_dir)):
    first = open(os.path.join(broken_dir, name)).readline()
    expected[name] = re.match(r"# expect: (\S+)", first).group(1)
seen = {}
for r in results("broken"):
    if "file" in r:
        seen[os.path.basename(r["file"])] = (r["status"], r["error_class"], r["stage"])
failures = []
for name, want in expected.items():
    got = seen.get(name)
    if got is None or got[0] == "pass" or got[1] != want:
        failures.append(f"{name}: expected {want}, got {got}")
    else:
        print(f"{name:48} {got[1]:20} at {got[2]}")
assert not failures, "\n".join(failures)
print(f"broken candidates: {len(expected)}/{len(expected)} in their class, in one run")
PY
