#!/usr/bin/env bash
# Configures and builds kforge into ./build (override with KFORGE_BUILD_DIR).
#   build.sh run   the CLI and the plugins pipelines/default.yaml loads (scripts/demo.sh)
#   build.sh all   every target: tests and benchmarks too (scripts/test.sh; the default)
# Both compile the runtime's and the plugins' sources in batches (KFORGE_UNITY_BUILD), the
# quickest way from scratch, so the tests cover the code as the demo compiles it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${KFORGE_BUILD_DIR:-$root/build}
purpose=${1:-all}
case $purpose in
  # kernelbench.suite, llm.* and eval.*; no debug info, which is a third of the
  # compile time, at the -O2 the tests run with (RelWithDebInfo's).
  run) tests=OFF type=${KFORGE_BUILD_TYPE:-Release} targets=(--target kforge_main_job) ;;
  all) tests=ON type=${KFORGE_BUILD_TYPE:-RelWithDebInfo} targets=() ;;
  *) echo "usage: $0 [run|all]" >&2; exit 2 ;;
esac
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="$type" "-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG" \
  -DKFORGE_UNITY_BUILD=ON -DKFORGE_BUILD_TESTS=$tests -DKFORGE_BUILD_BENCH=$tests >/dev/null
cmake --build "$build" -j "$(nproc)" "${targets[@]}"
