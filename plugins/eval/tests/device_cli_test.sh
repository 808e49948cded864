#!/usr/bin/env bash
# End to end: a pipeline naming a device this host cannot use stops before its first job
# (exit 2, each stage located, what is missing and what to do, nothing written), instead of
# running every job into harness_error and exiting 0.
#
#   plugins/eval/tests/device_cli_test.sh BUILD/core/kforge REPO_ROOT
#
# pipelines/triton-gpu.yaml with device cuda:999, which no host has: torch without CUDA
# says so, torch with CUDA says it sees fewer devices. Where torch has no CUDA (Debian's),
# the pipeline as shipped (cuda:0) is refused too. Needs a Python with torch (exits 77,
# skipped, without one).
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: $0 KFORGE_BINARY REPO_ROOT" >&2
  exit 2
fi
kforge=$(realpath "$1")
root=$(realpath "$2")
# shellcheck source=../../../tests/lib/torch_python.sh
source "$root/tests/lib/torch_python.sh"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pipeline=$root/pipelines/triton-gpu.yaml
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# Runs the pipeline with extra arguments; expects exit 2, the refusal located at each eval
# stage with `reason` in it, and no output directory.
expect_refused() {
  local name=$1 reason=$2
  shift 2
  local out=$work/$name rc=0
  "$kforge" run "$pipeline" --out "$out" "$@" >"$work/$name.stdout" 2>"$work/$name.stderr" || rc=$?
  [[ $rc -eq 2 ]] || fail "$name: exit $rc, want 2"
  for stage in check compile run; do
    grep -Eq "triton-gpu\.yaml:[0-9]+:[0-9]+: error: stage '$stage' \([a-z.]+\) cannot run here: device .* is not usable on this host: .*$reason" \
      "$work/$name.stderr" || fail "$name: stage $stage's refusal is not located or does not say '$reason'"
  done
  grep -q "install a CUDA build of torch\|sees [0-9]* cuda device" "$work/$name.stderr" || fail "$name: does not say what to do"
  [[ ! -e $out ]] || fail "$name: $out was written before the run was refused"
  if ((failures > 0)); then cat "$work/$name.stderr" >&2; fi
}

if "$KFORGE_PYTHON" -c 'import sys, torch; sys.exit(0 if torch.backends.cuda.is_built() else 1)'; then
  expect_refused no_such_device "cuda:999 does not exist" --set device=cuda:999
  echo "note: torch in $KFORGE_PYTHON has CUDA; the pipeline as shipped (cuda:0) is not tried here"
else
  expect_refused no_such_device "built without CUDA" --set device=cuda:999
  expect_refused as_shipped "built without CUDA"
fi

if ((failures > 0)); then
  echo "$failures failure(s)" >&2
  exit 1
fi
echo "device_cli: refused before the first job, located, with what to do"
