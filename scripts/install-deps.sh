#!/usr/bin/env bash
# Installs kforge's Debian 12 packages (idempotent).
#   install-deps.sh run   what building kforge and running the default pipeline need (scripts/demo.sh)
#   install-deps.sh all   that, and what the tests and benchmarks need (scripts/test.sh; the default)
set -euo pipefail
purpose=${1:-all}

# Building the CLI and the plugins, and running the default pipeline: g++ compiles the
# candidates (eval.compile.cpp), Python runs the harness and the PyTorch/NumPy references.
run_packages=(
  build-essential cmake ninja-build pkg-config
  libyaml-cpp-dev libfmt-dev libspdlog-dev libtbb-dev libcli11-dev nlohmann-json3-dev
  libcurl4-openssl-dev libsqlite3-dev libpcre2-dev
  python3 python3-torch python3-numpy python3-yaml
)
# Only the tests and benchmarks (chromium and libtorch-dev alone are most of their size).
test_packages=(
  git googletest libgtest-dev libgmock-dev libbenchmark-dev chromium
  python3-jsonschema  # validates results.jsonl, report.json and records against docs/schemas in the tests
  libtorch-dev python3-dev pybind11-dev  # headers for compiling load_inline CUDA candidates (eval.compile.cuda)
  slurm-wlm munge  # a one-host Slurm cluster for launcher slurm's test (plugins/eval/tests/slurm_cli_test.sh)
)

case $purpose in
  run) packages=("${run_packages[@]}") ;;
  all) packages=("${run_packages[@]}" "${test_packages[@]}") ;;
  *) echo "usage: $0 [run|all]" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  exit 0
fi

sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
echo "installing: ${missing[*]}" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
