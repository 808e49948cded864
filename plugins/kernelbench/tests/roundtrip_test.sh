#!/usr/bin/env bash
# KernelBench in and out through the real CLI, on the CPU: a run folder in KernelBench's
# layout (examples/kernelbench-run/runs/mini: two correct samples, a wrong value, a wrong shape, a syntax
# error, two missing samples, a file for a problem the checkout lacks) against a checkout of
# our own tasks (examples/kernelbench-run/KernelBench), evaluated by kforge, exported to KernelBench's
# eval_results.json and baseline file, scored by KernelBench's fast_p rule in
# roundtrip_check.py and compared with eval.run's timing statistics (results.jsonl) and
# kforge's report.json. Then: every output file is valid
# against its schema in docs/schemas, `kforge schema` prints those files, records carry the
# common status vocabulary, and `kforge compare` warns about runs timed on different software.
#
#   roundtrip_test.sh KFORGE_BINARY SOURCE_DIR WORK_DIR
set -euo pipefail
kforge=$1
src=$(cd "$2" && pwd)  # absolute: --set paths are relative to the pipeline file
work=$3
here="$src/plugins/kernelbench/tests"
data="$here/data"
example="$src/examples/kernelbench-run"

python=""
for candidate in "${KFORGE_PYTHON:-}" /usr/bin/python3 python3; do
  if [[ -n $candidate ]] && "$candidate" -c 'import torch' 2>/dev/null; then python=$candidate; break; fi
done
if [[ -z $python ]]; then echo "SKIP: no python with torch (the harness needs one)"; exit 77; fi
if ! "$python" -c 'import jsonschema' 2>/dev/null; then
  echo "SKIP: $python has no jsonschema module (Debian: python3-jsonschema; scripts/install-deps.sh installs it)"
  exit 77
fi
export KFORGE_PYTHON=$python

fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work"
mkdir -p "$work"
out="$work/out"

echo "== kforge run (CPU)"
"$kforge" run "$data/kernelbench-run-cpu.yaml" --out "$out" --progress off --report-format text,json \
  >"$work/run.out" 2>"$work/run.err" || { cat "$work/run.out" "$work/run.err"; fail "kforge run exited $?"; }
grep -q "level_1_problem_9_sample_0_kernel.py" "$work/run.err" ||
  { cat "$work/run.err"; fail "the kernel file of a problem the checkout lacks was not reported"; }

echo "== verdicts per candidate (records export)"
"$kforge" export "$out" --format records >/dev/null
"$python" - "$out/records.jsonl" <<'PY'
import json, sys
got = {(r["task"], r["sample"]): r["status"] for r in map(json.loads, open(sys.argv[1]))}
want = {("level1/1_ReLU", 0): "passed", ("level1/1_ReLU", 1): "passed",
        ("level1/2_Scale", 0): "incorrect numerical", ("level1/2_Scale", 1): "no candidate",
        ("level1/3_SumRows", 0): "incorrect shape", ("level1/3_SumRows", 1): "passed",
        ("level1/4_Tanh", 0): "no candidate", ("level1/4_Tanh", 1): "compile error"}
assert got == want, f"records: {got}"
for r in map(json.loads, open(sys.argv[1])):
    if r["status"] == "passed":
        assert r["latency_ms"] and r["reference_latency_ms"] and r["speedup"], r
        assert r["environment"] and r["environment"]["device"] == "cpu", r
print("records: every candidate in its class")
PY

echo "== kforge export --format kernelbench, scored by KernelBench's rule"
"$kforge" export "$out" --format kernelbench --to "$work/kb" >/dev/null
"$python" - "$work/kb/eval_results.json" <<'PY'
import json, sys
results = json.load(open(sys.argv[1]))
samples = {problem: [e["sample_id"] for e in entries] for problem, entries in results.items()}
# Missing samples are not guessed: KernelBench has no entry for a sample it never saw.
assert samples == {"1": [0, 1], "2": [0], "3": [0, 1], "4": [1]}, samples
assert results["4"][0]["compiled"] is False and "compilation_error" in results["4"][0]["metadata"], results["4"]
assert results["3"][0]["compiled"] is True and "correctness_issue" in results["3"][0]["metadata"], results["3"]
assert results["2"][0]["metadata"]["max_difference"], results["2"]
PY
"$python" "$here/roundtrip_check.py" "$work/kb/eval_results.json" "$work/kb/baseline_time_torch.json" \
  "$example/KernelBench/level1" 1 "$out/results.jsonl" "$out/report.json"

echo "== schemas"
for name in results report records; do
  "$kforge" schema --$name >"$work/$name.schema.json"
  cmp -s "$work/$name.schema.json" "$src/docs/schemas/$name.schema.json" ||
    fail "kforge schema --$name differs from docs/schemas/$name.schema.json"
done
"$python" "$here/validate_schema.py" "$src/docs/schemas/results.schema.json" "$out/results.jsonl" --lines
"$python" "$here/validate_schema.py" "$src/docs/schemas/report.schema.json" "$out/report.json"
"$python" "$here/validate_schema.py" "$src/docs/schemas/records.schema.json" "$out/records.jsonl" --lines
"$python" - "$out/report.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
envs = report["environments"]
assert len(envs) == 1 and envs[0]["facts"]["device"] == "cpu" and envs[0]["facts"]["torch"], envs
PY
grep -q "^Environment" "$work/run.out" || fail "the text report has no Environment table"

echo "== kforge compare warns about different software"
"$kforge" compare "$out" "$out" >/dev/null 2>"$work/same.err"
if grep -q "different" "$work/same.err"; then cat "$work/same.err"; fail "compare warned about identical runs"; fi
cp -r "$out" "$work/other"
"$python" - "$work/other/kforge.db" <<'PY'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for content, in db.execute("SELECT content FROM artifacts WHERE kind = 'environment'").fetchall():
    changed = json.loads(content)
    changed["torch"] = "0.0-other"
    db.execute("UPDATE artifacts SET content = ? WHERE content = ?", (json.dumps(changed), content))
db.commit()
PY
"$kforge" compare "$out" "$work/other" >/dev/null 2>"$work/other.err"
grep -q "different torch" "$work/other.err" || { cat "$work/other.err"; fail "compare did not warn about another torch"; }

echo "== export refusals and the shipped pipeline"
if "$kforge" export "$out" --format kernelbench --option level=2 --to "$work/none" 2>"$work/level.err"; then
  fail "exporting a level the run does not have succeeded"
fi
grep -q "no task of level 2" "$work/level.err" || { cat "$work/level.err"; fail "unclear refusal"; }
for backend in cuda triton; do
  "$kforge" validate "$src/pipelines/kernelbench-run.yaml" --set kernelbench="$example/KernelBench" \
    --set run="$example/runs/mini" --set backend=$backend --set problems=1-3 >/dev/null ||
    fail "pipelines/kernelbench-run.yaml does not validate with backend=$backend"
done
echo "PASS"
