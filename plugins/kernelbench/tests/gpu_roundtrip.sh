#!/usr/bin/env bash
# The KernelBench round trip on a GPU with real KernelBench problems (the lead's check; not
# run by ctest): the first N problems of a level of a real checkout, each with one sample
# that is the problem's own PyTorch code renamed ModelNew, evaluated on cuda:0 with
# KernelBench's trial counts, exported, scored by KernelBench's rule and compared with
# kforge's report; the environment must name the GPU and its driver. Skips (77) without a
# CUDA GPU.
#
#   gpu_roundtrip.sh KFORGE_BINARY SOURCE_DIR KERNELBENCH_DIR [LEVEL] [N]
#   e.g. plugins/kernelbench/tests/gpu_roundtrip.sh build/core/kforge . PATH/TO/KernelBench 1 12
set -euo pipefail
kforge=$1
src=$2
kb=$(cd "$3" && pwd)  # absolute: the problems are linked from another directory
level=${4:-1}
count=${5:-12}
python=${KFORGE_PYTHON:-$(command -v python3)}
if ! "$python" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  echo "SKIP: no CUDA GPU visible to $python"; exit 77
fi
work=$(mktemp -d)
mkdir -p "$work/KernelBench/level$level" "$work/run"
for id in $(seq 1 "$count"); do
  file=$(ls "$kb/level$level/${id}_"*.py)
  ln -s "$file" "$work/KernelBench/level$level/"
  sed 's/\bclass Model(/class ModelNew(/; s/super(Model, self)/super(ModelNew, self)/' "$file" \
    >"$work/run/level_${level}_problem_${id}_sample_0_kernel.py"
done
"$kforge" run "$src/plugins/kernelbench/tests/data/kernelbench-run-cpu.yaml" --out "$work/out" --progress off \
  --set kernelbench="$work/KernelBench" --set run="$work/run" --set samples=1 --set level="$level" \
  --set check.device=cuda:0 --set run.device=cuda:0 --set run.warmup=3 --set run.timing_trials=100 \
  --set run.timeout=10m --set run.memory_mb=65536
"$kforge" export "$work/out" --format kernelbench --to "$work/export"
"$python" "$src/plugins/kernelbench/tests/roundtrip_check.py" "$work/export/eval_results.json" \
  "$work/export/baseline_time_torch.json" "$work/KernelBench/level$level" "$level" "$work/out/results.jsonl" \
  "$work/out/report.json"
"$python" - "$work/out/report.json" <<'PY'
import json, sys
facts = [e["facts"] for e in json.load(open(sys.argv[1]))["environments"]]
print("environments:", facts)
assert facts and all(f.get("gpu") and f.get("driver") for f in facts), "the GPU's model and driver are missing"
PY
echo "PASS ($work)"
