#!/usr/bin/env bash
# GPU smoke test of the evaluation plugin (issue 3), for a CUDA host (H100/H200 with
# torch + triton). Without a GPU it prints "skipped: no GPU" and exits 0.
#
#   plugins/eval/tests/gpu_smoke.sh [BUILD_DIR]
#
# 1. kforge: with BUILD_DIR, that build is used; without, kforge is built from this
#    checkout into a temporary directory (cmake + ninja). Its C++ libraries (yaml-cpp,
#    fmt, spdlog, tbb, ...) may be missing on a GPU host: then the build is reported as
#    skipped and step 3 does not run. The GPU checks of step 2 do not need it.
# 2. The harness on cuda:0 through its protocol (gpu_check.py): the reference of every
#    bundled task at the full profile as its own candidate, the Triton candidates
#    (check -> compile -> timed run), the load_inline CUDA candidates, and the broken
#    Triton and CUDA candidates (each in its class; an illegal memory access must not
#    poison the next job), the timing's hostile candidates (a private stream,
#    memoizing, a lazy tensor: each must be rejected), and the kernelbenchx tasks'
#    references and Triton candidates. Prints a table.
#    Then the hostile candidates of issue 9 as Triton and CUDA candidates
#    (plugins/eval/harness/tests/test_attacks_gpu.py, on $DEVICE seen as cuda:0).
# 3. The hand-over of outputs (issue 20, bench/handover.py): a candidate's output of
#    1 and COMPARE_GB (6) GB crossing into the task host's buffer on the device, and the
#    host judging it there, in GB/s.
# 4. With a kforge binary: `kforge run pipelines/triton-gpu.yaml` and
#    `pipelines/kernelbenchx.yaml` end to end, and every
#    bundled task's reference at full size eight at a time (data/reference-gpu.yaml),
#    with memory-aware admission and without it (MEMORY_GB=100000): every job must pass,
#    none may run out of memory; the wall times are printed.
#
# Environment: KFORGE_PYTHON (interpreter with CUDA torch and triton; default: the first
# of /opt/torch/.venv/bin/python3, python3 on PATH that sees a GPU), DEVICE (cuda:0),
# COMPARE_GB (6).
# Exit status: 0 when everything was as expected or skipped, 1 otherwise.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
device="${DEVICE:-cuda:0}"
build_dir="${1:-}"

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "skipped: no GPU (nvidia-smi missing or sees no device)"
  exit 0
fi

python=""
for candidate in "${KFORGE_PYTHON:-}" /opt/torch/.venv/bin/python3 "$(command -v python3 || true)"; do
  [ -n "$candidate" ] && [ -x "$candidate" ] || continue
  if "$candidate" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; then
    python="$candidate"
    break
  fi
done
if [ -z "$python" ]; then
  echo "skipped: no GPU usable from Python (no interpreter among KFORGE_PYTHON, /opt/torch/.venv/bin/python3, python3 has a CUDA build of torch that sees a device)"
  exit 0
fi

echo "== GPU"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
"$python" -c 'import sys, torch; print("python", sys.executable, "torch", torch.__version__, "cuda", torch.version.cuda); import triton; print("triton", triton.__version__)' \
  || echo "note: triton is not importable: the triton sections will fail"

status=0

echo "== kforge build"
kforge=""
if [ -n "$build_dir" ]; then
  kforge="$(find "$build_dir" -maxdepth 3 -name kforge -type f -perm -u+x | head -n 1)"
  [ -n "$kforge" ] || { echo "no kforge binary under $build_dir"; status=1; }
else
  build_dir="$(mktemp -d "${TMPDIR:-/tmp}/kforge-gpu-smoke.XXXXXX")"
  if cmake -S "$repo" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DKFORGE_BUILD_TESTS=OFF -DKFORGE_BUILD_BENCH=OFF >"$build_dir/configure.log" 2>&1 \
     && cmake --build "$build_dir" >"$build_dir/build.log" 2>&1; then
    kforge="$(find "$build_dir" -maxdepth 3 -name kforge -type f -perm -u+x | head -n 1)"
    echo "built $kforge"
  else
    echo "kforge build skipped: it did not configure or build here (logs in $build_dir); last lines:"
    tail -n 5 "$build_dir"/*.log | sed 's/^/  /'
  fi
fi

# The arena's C allocator (handover/arena.py), which the plugin passes to the servers it
# starts: the servers started here by Python get it from the build too.
arena_allocator="$(find "$build_dir" -name libkforge_arena_allocator.so -type f 2>/dev/null | head -n 1)"
if [ -n "$arena_allocator" ]; then
  export KFORGE_ARENA_ALLOCATOR="$arena_allocator"
else
  echo "no libkforge_arena_allocator.so under $build_dir: the Python-started servers copy outputs in the child (flag outputs_copied_in_child)"
fi

echo "== harness checks on $device (gpu_check.py)"
"$python" "$here/gpu_check.py" --device "$device" --profile full --max-children 8 \
  --sections reference,triton,broken_triton,cuda,broken_cuda,timing,kbx || status=1

echo "== hostile candidates on cuda:0 as Triton and CUDA candidates (harness tests/test_attacks_gpu.py)"
# Each attack of tests/data/candidates/hostile_l3 must fail, be blamed on the candidate,
# leave the store, the cache, the secrets and the host untouched, and the server healthy.
(cd "$repo/plugins/eval/harness" && CUDA_VISIBLE_DEVICES="${device#cuda:}" \
   "$python" -m unittest tests.test_attacks_gpu -v 2>&1 | tail -n 60) || status=1

echo "== outputs handed over on $device (bench/handover.py)"
PYTHONPATH="$repo/plugins/eval/harness" "$python" "$repo/bench/handover.py" --device "$device" \
  --gb 1 "${COMPARE_GB:-6}" || status=1

if [ -n "$kforge" ]; then
  for memory_gb in 0 100000; do
    label="with memory admission"
    [ "$memory_gb" = 0 ] || label="without memory admission (every job fits a ${memory_gb} GB budget)"
    echo "== every bundled task's reference at full size, 8 at a time, $label"
    out_dir="$(mktemp -d "${TMPDIR:-/tmp}/kforge-reference-gpu.XXXXXX")"
    started=$(date +%s)
    KFORGE_PYTHON="$python" MEMORY_GB="$memory_gb" "$kforge" run "$here/data/reference-gpu.yaml" \
      --set device="$device" --out "$out_dir" --no-cache --progress off >"$out_dir/log" 2>&1
    echo "wall time: $(( $(date +%s) - started )) s (results in $out_dir)"
    "$python" - "$out_dir/results.jsonl" <<'PY' || status=1
import json, sys
jobs = [json.loads(line) for line in open(sys.argv[1])]
bad = [(j["task"], j["error_class"], j["message"][:160]) for j in jobs if j["status"] != "pass"]
retried = [j["task"] for j in jobs if j["stages"][-1].get("metrics", {}).get("retried_alone")]
peak = max((j["stages"][-1].get("metrics", {}).get("task_peak_mb", 0) for j in jobs), default=0)
print(f"{len(jobs) - len(bad)}/{len(jobs)} pass; retried alone after an out-of-memory: {retried or 'none'}; "
      f"largest task_peak_mb {peak:.0f}")
for row in bad:
    print("  NOT PASSED:", *row)
sys.exit(1 if bad else 0)
PY
  done
  echo "== kforge run pipelines/kernelbenchx.yaml"
  out_dir="$(mktemp -d "${TMPDIR:-/tmp}/kforge-kernelbenchx.XXXXXX")"
  if KFORGE_PYTHON="$python" "$kforge" run "$repo/pipelines/kernelbenchx.yaml" --set device="$device" \
       --out "$out_dir" ; then
    echo "kforge run: ok (results in $out_dir)"
  else
    echo "kforge run: exit status $? (results in $out_dir)"
    status=1
  fi
  echo "== kforge run pipelines/triton-gpu.yaml"
  out_dir="$(mktemp -d "${TMPDIR:-/tmp}/kforge-triton-run.XXXXXX")"
  if KFORGE_PYTHON="$python" "$kforge" run "$repo/pipelines/triton-gpu.yaml" --set device="$device" \
       --out "$out_dir" ; then
    echo "kforge run: ok (results in $out_dir)"
  else
    echo "kforge run: exit status $? (results in $out_dir)"
    status=1
  fi
fi

exit $status
