#!/usr/bin/env bash
# The 12-task run of issue 20 on a GPU host, kforge beside KernelBench's own flow in the
# same call: KernelBench level 1 tasks 1-12 at full size, every reference as its own
# candidate, 5 correctness trials, 3 warm-up and 100 timed calls. Needs a bundle
# (scripts/bundle.sh BUNDLE) and a KernelBench checkout's level1 task files and src/.
#
#   bench/gpu_12.sh BUNDLE TASKS_DIR KERNELBENCH_REPO OUT
set -uo pipefail
bundle=$(realpath "$1") tasks=$(realpath "$2") kernelbench=$(realpath "$3") out=$(realpath -m "$4")
root=$(cd "$(dirname "$0")/.." && pwd)
python=${KFORGE_PYTHON:-python3}
mkdir -p "$out"
start=$(date +%s.%N)
KFORGE_PYTHON=$python "$bundle/bin/kforge-run" run "$root/plugins/eval/tests/data/reference-timed-gpu.yaml" \
  --set suite="$tasks" --out "$out/kforge" --no-cache --progress off --log-level warn >"$out/kforge.log" 2>&1
echo "kforge: exit $? in $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}') s"
"$python" - "$out/kforge/results.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    job = json.loads(line)
    m = job["stages"][-1].get("metrics", {})
    print(f'{job["task"][:40]:40} {job["stages"][-1]["status"]:6} ref {m.get("reference_ms", float("nan")):9.4f} cand {m.get("candidate_ms", float("nan")):9.4f} speedup {m.get("speedup", float("nan")):6.3f} child {m.get("child_seconds", float("nan")):6.1f}s {job["stages"][-1].get("message", "")[:120]}')
PY
start=$(date +%s.%N)
"$python" "$root/bench/kernelbench_flow.py" --kernelbench "$kernelbench" --trials 5 --perf-trials 100 "$tasks"/*.py \
  >"$out/kernelbench.jsonl" 2>"$out/kernelbench.log"
echo "KernelBench flow: exit $? in $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}') s"
cat "$out/kernelbench.jsonl"
