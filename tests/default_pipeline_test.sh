#!/usr/bin/env bash
# End to end: the embedded default run (pipelines/default.yaml, docs/default-run.md).
#
#   tests/default_pipeline_test.sh BUILD/core/kforge REPO_ROOT
#
# The real kforge binary runs the default pipeline on the bundled tasks and the recorded
# answers of pipelines/cassettes/default.jsonl, three times: strategy C (the file as it is:
# a model per complexity class), A (deepseek-chat for every task) and B (qwen2.5-coder-7b for
# every task). Every job must reach the verdict, in the fix round and along the path of
# stages, that its answers were written for (EXPECTED_* below); the counts each run must
# produce follow from those tables and are checked too. It also checks that the cassette is
# what scripts/make_cassette.py builds from its sources.
#
# Needs g++ and a Python with torch for the evaluation harness, found as the harness finds
# it (python: auto): $KFORGE_PYTHON, else the first of /usr/bin/python3, python3 and python
# that imports torch. Exits 77 (skipped) without them.
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: $0 KFORGE_BINARY REPO_ROOT" >&2
  exit 2
fi
kforge=$1
root=$2

if ! command -v g++ >/dev/null; then
  echo "SKIP: no g++ for the C++ candidates"
  exit 77
fi
python=
for candidate in ${KFORGE_PYTHON:-/usr/bin/python3 python3 python}; do
  if "$candidate" -c 'import torch' 2>/dev/null; then
    python=$candidate
    break
  fi
done
if [[ -z $python ]]; then
  echo "SKIP: no Python that imports torch (set KFORGE_PYTHON to one)"
  exit 77
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# A cache of compiled candidates of its own, so the run compiles as a fresh checkout would.
export XDG_CACHE_HOME=$work/cache

"$python" "$root/scripts/make_cassette.py" --check

# One line per job: task, sample, final status, fix round, model, then the stages the job
# went through after llm.select (stage:error_class where it did not pass).
EXPECTED_C='
001_relu 0 pass 0 deepseek-chat generate check compile run
001_relu 1 pass 1 deepseek-chat generate check compile:compile_error fix check compile run
002_gelu 0 pass 1 deepseek-chat generate check compile run:numerical_mismatch fix check compile run
002_gelu 1 pass 1 deepseek-chat generate check compile run:numerical_mismatch fix check compile run
005_leaky_relu 0 pass 1 deepseek-chat generate check compile run:init_error fix check compile run
005_leaky_relu 1 pass 0 deepseek-chat generate check compile run
008_clamp 0 pass 1 deepseek-chat generate check:checker_rejected fix check compile run
008_clamp 1 pass 1 deepseek-chat generate check:checker_rejected fix check compile run
013_fake_quantize_int8 0 pass 0 deepseek-chat generate check compile run
013_fake_quantize_int8 1 pass 0 deepseek-chat generate check compile run
015_sum_over_dim 0 pass 1 deepseek-chat generate check compile run:numerical_mismatch fix check compile run
015_sum_over_dim 1 pass 0 deepseek-chat generate check compile run
018_argmax_over_dim 0 pass 2 deepseek-chat generate check compile run:dtype_mismatch fix check compile run:numerical_mismatch fix check compile run
018_argmax_over_dim 1 pass 0 deepseek-chat generate check compile run
019_softmax 0 fail 2 deepseek-chat generate check compile run:crash fix check compile run:crash fix:fix_failed
019_softmax 1 fail 2 deepseek-chat generate check compile run:numerical_mismatch fix check compile run:numerical_mismatch fix check compile run:numerical_mismatch
021_layer_norm 0 pass 0 deepseek-chat generate check compile run
021_layer_norm 1 pass 0 deepseek-chat generate check compile run
022_rms_norm 0 pass 0 deepseek-chat generate check compile run
022_rms_norm 1 pass 1 deepseek-chat generate check compile run:runtime_error fix check compile run
024_max_pool2d 0 pass 0 deepseek-chat generate check compile run
024_max_pool2d 1 fail 1 deepseek-chat generate check compile run:numerical_mismatch fix:fix_failed
032_square_matmul 0 pass 0 deepseek-reasoner generate check compile run
032_square_matmul 1 pass 0 deepseek-reasoner generate check compile run
035_matvec 0 pass 0 deepseek-reasoner generate check compile run
035_matvec 1 pass 0 deepseek-reasoner generate check compile run
041_int8_weight_linear 0 pass 0 deepseek-reasoner generate check compile run
041_int8_weight_linear 1 fail 0 deepseek-reasoner generate:no_code
043_conv2d 0 pass 0 glm-5.1 generate check compile run
043_conv2d 1 pass 0 glm-5.1 generate check compile run
045_cross_entropy_loss 0 pass 0 glm-5.1 generate check compile run
045_cross_entropy_loss 1 pass 1 glm-5.1 generate check compile run:shape_mismatch fix check compile run
049_scaled_dot_product_attention 0 pass 1 glm-5.1 generate check compile run:numerical_mismatch fix check compile run
049_scaled_dot_product_attention 1 pass 0 glm-5.1 generate check compile run
051_adam_step 0 pass 0 deepseek-chat generate check compile run
051_adam_step 1 pass 0 deepseek-chat generate check compile run
055_embedding_lookup 0 pass 0 deepseek-chat generate check compile run
055_embedding_lookup 1 pass 0 deepseek-chat generate check compile run
058_numpy_relu 0 pass 0 deepseek-chat generate check compile run
058_numpy_relu 1 pass 0 deepseek-chat generate check compile run
'

# Strategies A and B: every job has the fixed model; the jobs listed here differ from
# EXPECTED_C (answers recorded for that model), every other one takes the same path.
EXPECTED_A_CHANGES='
041_int8_weight_linear 1 pass 0 deepseek-chat generate check compile run
043_conv2d 0 fail 2 deepseek-chat generate check compile run:numerical_mismatch fix check compile run:numerical_mismatch fix check compile run:numerical_mismatch
043_conv2d 1 fail 2 deepseek-chat generate check compile run:numerical_mismatch fix check compile run:numerical_mismatch fix check compile run:numerical_mismatch
'
EXPECTED_B_CHANGES='
021_layer_norm 0 fail 2 qwen2.5-coder-7b generate check compile run:numerical_mismatch fix check compile run:numerical_mismatch fix check compile run:numerical_mismatch
021_layer_norm 1 fail 2 qwen2.5-coder-7b generate check compile run:numerical_mismatch fix check compile run:numerical_mismatch fix check compile run:numerical_mismatch
032_square_matmul 0 pass 1 qwen2.5-coder-7b generate check compile run:numerical_mismatch fix check compile run
032_square_matmul 1 pass 1 qwen2.5-coder-7b generate check compile run:numerical_mismatch fix check compile run
041_int8_weight_linear 1 pass 0 qwen2.5-coder-7b generate check compile run
043_conv2d 0 fail 2 qwen2.5-coder-7b generate check:syntax_error fix check compile run:shape_mismatch fix:fix_failed
043_conv2d 1 fail 2 qwen2.5-coder-7b generate check:syntax_error fix check compile run:shape_mismatch fix:fix_failed
055_embedding_lookup 0 pass 1 qwen2.5-coder-7b generate check:checker_rejected fix check compile run
'

# run_and_check NAME FIXED_MODEL|- CHANGES COUNTS [--set ...]: runs the pipeline into
# $work/NAME and compares its results.jsonl with EXPECTED_C, where FIXED_MODEL (unless -)
# replaces every model and CHANGES replaces whole lines. COUNTS is the summary the run
# must give: "pass=N fail=N tasks_solved=N first_pass=N fixed=N rounds=N" followed by
# the final error classes of the failed jobs with their counts.
run_and_check() {
  local name=$1 fixed_model=$2 changes=$3 counts=$4
  shift 4
  local started=$SECONDS rc=0
  "$kforge" run "$root/pipelines/default.yaml" --out "$work/$name" --progress off "$@" \
    >"$work/$name.log" 2>&1 || rc=$?
  if ((rc != 0)); then
    echo "FAIL: kforge run ($name) exited with $rc; the end of its output:" >&2
    tail -n 40 "$work/$name.log" >&2
    return 1
  fi
  echo "strategy $name: ran in $((SECONDS - started)) s"
  EXPECTED="$EXPECTED_C" CHANGES="$changes" FIXED_MODEL="$fixed_model" COUNTS="$counts" \
    "$python" - "$work/$name/results.jsonl" "$name" <<'PY'
import collections
import json
import os
import sys

results_path, name = sys.argv[1], sys.argv[2]


def table(text):
    rows = {}
    for line in text.strip().splitlines():
        task, sample, status, round_, model, *path = line.split()
        rows[(task, int(sample))] = (status, int(round_), model, " ".join(path))
    return rows


expected = table(os.environ["EXPECTED"])
if os.environ["FIXED_MODEL"] != "-":
    expected = {job: (s, r, os.environ["FIXED_MODEL"], p) for job, (s, r, _, p) in expected.items()}
expected.update(table(os.environ["CHANGES"]))

actual = {}
problems = []
with open(results_path, encoding="utf-8") as results:
    for line in results:
        job = json.loads(line)
        path = " ".join(s["stage"] + ("" if s["status"] == "pass" else ":" + s.get("error_class", "?"))
                        for s in job["stages"] if s["stage"] != "select")
        key = (job["task"], job["sample"])
        actual[key] = (job["status"], job["round"], job.get("model", "-"), path)
        # Every answer, recorded or not, carries its tokens and their price.
        if not (job.get("tokens_in", 0) > 0 and job.get("tokens_out", 0) > 0 and job.get("cost", 0) > 0):
            problems.append(f"{key}: no tokens or cost recorded: {job.get('tokens_in')}, "
                            f"{job.get('tokens_out')}, {job.get('cost')}")

for key in sorted(set(expected) | set(actual)):
    want, got = expected.get(key), actual.get(key)
    if want != got:
        problems.append(f"{key[0]} sample {key[1]}:\n    expected {want}\n    got      {got}")

# The counts, from the results themselves.
passed = [k for k, v in actual.items() if v[0] == "pass"]
failed = [k for k, v in actual.items() if v[0] != "pass"]
summary = {
    "pass": len(passed),
    "fail": len(failed),
    "tasks_solved": len({task for task, _ in passed}),
    "first_pass": sum(1 for k in passed if actual[k][1] == 0),
    "fixed": sum(1 for k in passed if actual[k][1] > 0),
    "rounds": sum(v[1] for v in actual.values()),
}
final_classes = collections.Counter(actual[k][3].split()[-1].split(":")[1] for k in failed)
got_counts = " ".join(f"{k}={v}" for k, v in summary.items()) + " " + \
    " ".join(f"{c}={n}" for c, n in sorted(final_classes.items()))
if got_counts != os.environ["COUNTS"]:
    problems.append(f"counts:\n    expected {os.environ['COUNTS']}\n    got      {got_counts}")

if problems:
    print(f"FAIL: strategy {name}: {len(problems)} difference(s)", file=sys.stderr)
    for problem in problems:
        print("  " + problem, file=sys.stderr)
    sys.exit(1)
print(f"strategy {name}: {len(actual)} jobs as designed; {got_counts}")
PY
}

run_and_check C - "" \
  "pass=36 fail=4 tasks_solved=19 first_pass=25 fixed=11 rounds=17 fix_failed=2 no_code=1 numerical_mismatch=1"

# The no_code answer is an empty one cut at max_tokens; the message must say so.
grep -q 'holds no code (it was cut at max_tokens; raise max_tokens)' "$work/C/results.jsonl" || {
  echo "FAIL: the no_code job does not say that the answer was cut at max_tokens" >&2
  exit 1
}

run_and_check A deepseek-chat "$EXPECTED_A_CHANGES" \
  "pass=35 fail=5 tasks_solved=18 first_pass=24 fixed=11 rounds=21 fix_failed=2 numerical_mismatch=3" \
  --set strategy=A-deepseek-chat --set "select.table={}" --set select.default=deepseek-chat

run_and_check B qwen2.5-coder-7b "$EXPECTED_B_CHANGES" \
  "pass=33 fail=7 tasks_solved=17 first_pass=19 fixed=14 rounds=28 fix_failed=4 numerical_mismatch=3" \
  --set strategy=B-qwen-7b --set "select.table={}" --set select.default=qwen2.5-coder-7b

# Seed 000's strategy table over the three runs: each row names its strategy and its pass
# rate over the 20 tasks.
"$kforge" compare "$work/C" "$work/A" "$work/B" >"$work/compare.txt" 2>&1 || {
  echo "FAIL: kforge compare exited with $?:" >&2
  cat "$work/compare.txt" >&2
  exit 1
}
for row in "C-by-complexity 19/20" "A-deepseek-chat 18/20" "B-qwen-7b 17/20"; do
  if ! grep -Eq "^${row% *} +${row#* } " "$work/compare.txt"; then
    echo "FAIL: kforge compare shows no row '$row':" >&2
    cat "$work/compare.txt" >&2
    exit 1
  fi
done
cat "$work/compare.txt"

echo "PASS"
