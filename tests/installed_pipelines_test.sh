#!/usr/bin/env bash
# The install tree stands on its own: installs the build into a scratch prefix and checks
# that every installed pipeline validates there (its stages created, as `run` would), that
# what the pipelines need came along (the bundled task suite, the default run's recorded
# answers) and what is not a product did not (the demo plugin and pipeline, the cassette's
# source files); then runs the installed default pipeline on two tasks.
#
#   tests/installed_pipelines_test.sh BUILD_DIR WORK_DIR
#
# The run needs g++ and a Python with torch for the harness (found as the harness finds it);
# without them only the run is skipped, and the test says so and exits 77.
set -euo pipefail
build=$1 work=$2
rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
kforge=$prefix/bin/kforge
share=$prefix/share/kforge
unset KFORGE_PLUGIN_PATH KFORGE_HARNESS_DIR

fail() { echo "FAIL: $*"; exit 1; }
test -f "$share/examples/kernelbench-mini/manifest.yaml" || fail "the bundled task suite is not installed"
test -f "$share/pipelines/cassettes/default.jsonl" || fail "the default run's cassette is not installed"
test ! -e "$share/pipelines/cassettes/default" || fail "the cassette's source files are installed"
test ! -e "$share/pipelines/demo.yaml" || fail "the demo pipeline is installed"
if ls "$prefix"/lib/kforge/plugins | grep -q demo; then fail "the demo plugin is installed"; fi

for pipeline in "$share"/pipelines/*.yaml; do
  [[ $(basename "$pipeline") == models.yaml ]] && continue  # model presets, not a pipeline
  (cd "$work" && "$kforge" validate "$pipeline") || fail "installed $(basename "$pipeline") does not validate"
done

if ! command -v g++ >/dev/null; then
  echo "validated every installed pipeline; SKIP the run: no g++ for the C++ candidates"
  exit 77
fi
if ! ${KFORGE_PYTHON:-/usr/bin/python3} -c 'import torch' 2>/dev/null; then
  echo "validated every installed pipeline; SKIP the run: ${KFORGE_PYTHON:-/usr/bin/python3} cannot import torch"
  exit 77
fi
export XDG_CACHE_HOME=$work/cache
(cd "$work" && "$kforge" run "$share/pipelines/default.yaml" --set limit=2 --out "$work/out" --progress off \
  --log-level warn) || fail "the installed default pipeline does not run"
test "$(wc -l < "$work/out/results.jsonl")" -eq 4 || fail "expected 4 jobs (2 tasks x k=2)"
echo "installed pipelines: all validate; the default pipeline ran from the install tree"
