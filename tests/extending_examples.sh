#!/usr/bin/env bash
# docs/extending.md's first three recipes, done: installs kforge into a scratch prefix,
# builds examples/extending (an LLM backend, a device runner, a report table) against it
# with find_package(kforge), runs its tests, installs the plugins, and runs the example's
# pipeline with the installed kforge, checking what the doc says the user sees.
set -euo pipefail
build_dir=$1 example=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix
cmake --install "$build_dir" --prefix "$prefix" >/dev/null
cmake -S "$example" -B "$work/build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_INSTALL_PREFIX="$work/plugin-prefix" >/dev/null
cmake --build "$work/build" >"$work/build.log" || { cat "$work/build.log"; exit 1; }
ctest --test-dir "$work/build" --output-on-failure
cmake --install "$work/build" >/dev/null
plugin_dir=$work/plugin-prefix/lib/kforge/plugins
for name in command_llm device_runner device_report; do test -f "$plugin_dir/libkforge_$name.so"; done

export PATH=$prefix/bin:$PATH
export KFORGE_PLUGIN_PATH=$plugin_dir
# Into files, not pipes: grep -q leaves at its first match, and kforge would die of SIGPIPE.
kforge plugins list >"$work/list.txt"
for kind in command_llm.generate device_runner.run device_report.devices; do
  grep -q "$kind" "$work/list.txt" || { echo "kforge plugins list lacks $kind:"; cat "$work/list.txt"; exit 1; }
done
kforge plugins describe command_llm.generate >"$work/describe.txt"
grep -q "role: generate" "$work/describe.txt" || { cat "$work/describe.txt"; exit 1; }
kforge validate "$example/pipeline.yaml"

kforge run "$example/pipeline.yaml" --out "$work/out" --log-level warn
out=$work/out
# 001_relu and 002_gelu pass on npu:0 at 2.5x, 003_sigmoid's outputs do not match.
/usr/bin/python3 - "$out/results.jsonl" <<'PY'
import json, sys
jobs = {job["task"]: job for job in map(json.loads, open(sys.argv[1]))}
assert sorted(jobs) == ["001_relu", "002_gelu", "003_sigmoid"], sorted(jobs)
for task, job in jobs.items():
    assert job["model"] == "fake-coder" and job["device"] == "npu:0", job
    want = ("fail", "numerical_mismatch") if task == "003_sigmoid" else ("pass", "")
    assert (job["status"], job.get("error_class")) == want, job
    if task != "003_sigmoid":
        assert job["environment"] == {"npu": "Ascend 910B", "cann": "8.0"}, job
PY
# The report table: in report.md, and in report.json with its data.
grep -q '^## Devices' "$out/report.md" || { echo "no Devices table in report.md:"; cat "$out/report.md"; exit 1; }
grep -q '| npu:0 | 3 | 2 | 2.50x |' "$out/report.md" || { grep -A6 '^## Devices' "$out/report.md"; exit 1; }
/usr/bin/python3 - "$out/report.json" <<'PY'
import json, sys
tables = {t["title"]: t for t in json.load(open(sys.argv[1]))["tables"]}
assert tables["Devices"]["data"] == {"npu:0": {"candidates": 3, "passed": 2, "median_speedup": 2.5}}, tables["Devices"]
PY
# kforge report prints it too, and the device's environment in the Environment table
# (the lines docs/extending.md shows).
kforge report "$out" >"$work/report.txt"
for line in 'npu:0            3       2           2.50x' '8.0   Ascend 910B     2'; do
  grep -qxF "$line" "$work/report.txt" || { echo "kforge report lacks the line '$line':"; cat "$work/report.txt"; exit 1; }
done
# A model's program that is not there stops the run before its first job, at the stage.
if command -v ollama >/dev/null; then
  echo "the missing-program check is skipped: ollama is installed here"
else
  status=0
  kforge run "$example/pipeline.yaml" --out "$work/refused" \
    --set generate.command='[ollama, run, "qwen2.5-coder:7b"]' 2>"$work/refused.txt" || status=$?
  test "$status" -eq 2
  test ! -e "$work/refused"
  grep -qF "pipeline.yaml:10:5: error: stage 'generate' (command_llm.generate) cannot run here: no program 'ollama' on PATH (or not executable); install it or give its path in command" \
    "$work/refused.txt" || { cat "$work/refused.txt"; exit 1; }
fi

# Recipe 4: a pipeline's own L1 rule. The rules file is checked when the pipeline is;
# the run needs the harness's Python with torch (the plugin's tests, ExtendingRecipe.*,
# show the same verdicts through eval.check).
kforge validate "$example/single-thread.yaml"
# A misspelled kind is refused at its place in the rules file, exit 2, before anything runs.
mkdir -p "$work/misspelled/rules"
sed "s|\.\./kernelbench-mini|$example/../kernelbench-mini|g" "$example/single-thread.yaml" >"$work/misspelled/single-thread.yaml"
sed 's/kind: string_pattern/kind: string_patern/' "$example/rules/single-thread.yaml" >"$work/misspelled/rules/single-thread.yaml"
status=0
kforge validate "$work/misspelled/single-thread.yaml" 2>"$work/misspelled.txt" || status=$?
test "$status" -eq 2
grep -qF "single-thread.yaml:12:5: error: stage 'check' (eval.check) could not be created: $work/misspelled/rules/single-thread.yaml:6:5: rule #1 (single-thread-openmp): unknown kind 'string_patern'; kinds are assign, " \
  "$work/misspelled.txt" || { cat "$work/misspelled.txt"; exit 1; }
if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  kforge run "$example/single-thread.yaml" --out "$work/single-thread" --log-level warn >/dev/null
  /usr/bin/python3 - "$work/single-thread/results.jsonl" <<'PY'
import json, re, sys
jobs = [json.loads(line) for line in open(sys.argv[1])]
assert len(jobs) == 3, jobs
for job in jobs:
    assert (job["status"], job["error_class"]) == ("fail", "checker_rejected"), job
    assert re.fullmatch(r"line \d+:\d+: \[single-thread-openmp\] the native code uses OpenMP \(#pragma omp\); "
                        r"this benchmark times single-threaded kernels", job["message"]), job["message"]
PY
else
  echo "recipe 4's run skipped: /usr/bin/python3 cannot import torch (the harness needs it)"
fi
echo "extending examples: built, tested, installed, run, reported"
