#!/usr/bin/env bash
# Installs kforge's Debian 12 packages (idempotent).
#   install-deps.sh build   what building the CLI and the plugins needs
#   install-deps.sh run     that, and what running the default pipeline needs (scripts/demo.sh)
#   install-deps.sh all     that, and what the tests and benchmarks need (scripts/test.sh; the default)
#   install-deps.sh --check PURPOSE   installs nothing; exit 0 when PURPOSE's packages are all
#                                     there, else 1 after listing the missing ones
set -euo pipefail
check=false
if [[ ${1:-} == --check ]]; then
  check=true
  shift
fi
purpose=${1:-all}

# Building the CLI and the plugins. g++ also compiles the candidates (eval.compile.cpp);
# build-essential's make, dpkg-dev and perl are not needed (CMake drives Ninja).
build_packages=(
  g++ cmake ninja-build pkg-config
  libyaml-cpp-dev libfmt-dev libspdlog-dev libtbb-dev libcli11-dev nlohmann-json3-dev
  libcurl4-openssl-dev libsqlite3-dev libpcre2-dev
)
# Running the default pipeline: Python runs the harness and the PyTorch/NumPy references
# (python3-torch brings most of the set-up's download and unpacking).
run_packages=(python3 python3-torch python3-numpy python3-yaml)
# Only the tests and benchmarks (chromium and libtorch-dev alone are most of their size).
test_packages=(
  git googletest libgtest-dev libgmock-dev libbenchmark-dev chromium
  patch  # GNU patch: plugins/llm's unified_diff_test applies the diffs it writes
  python3-jsonschema  # validates results.jsonl, report.json and records against docs/schemas in the tests
  libtorch-dev python3-dev pybind11-dev  # headers for compiling load_inline CUDA candidates (eval.compile.cuda)
  slurm-wlm munge  # a one-host Slurm cluster for launcher slurm's test (plugins/eval/tests/slurm_cli_test.sh)
)

case $purpose in
  build) packages=("${build_packages[@]}") ;;
  run) packages=("${build_packages[@]}" "${run_packages[@]}") ;;
  all) packages=("${build_packages[@]}" "${run_packages[@]}" "${test_packages[@]}") ;;
  *) echo "usage: $0 [--check] [build|run|all]" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  exit 0
fi
if $check; then
  echo "missing: ${missing[*]}" >&2
  exit 1
fi

sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
echo "installing: ${missing[*]}" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
