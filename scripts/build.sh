#!/usr/bin/env bash
# Configures and builds kforge into ./build (override with KFORGE_BUILD_DIR).
#   build.sh run   the CLI and the plugins pipelines/default.yaml loads (scripts/demo.sh)
#   build.sh all   every target: tests and benchmarks too (scripts/test.sh; the default)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${KFORGE_BUILD_DIR:-$root/build}
purpose=${1:-all}
case $purpose in
  # kernelbench.suite, llm.*, eval.* (the harness is Python, run from the source tree).
  run) tests=OFF targets=(--target kforge kforge_kernelbench kforge_llm kforge_eval) ;;
  all) tests=ON targets=() ;;
  *) echo "usage: $0 [run|all]" >&2; exit 2 ;;
esac
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=${KFORGE_BUILD_TYPE:-RelWithDebInfo} \
  -DKFORGE_BUILD_TESTS=$tests -DKFORGE_BUILD_BENCH=$tests >/dev/null
cmake --build "$build" -j "$(nproc)" "${targets[@]}"
