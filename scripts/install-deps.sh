#!/usr/bin/env bash
# Installs kforge's build and test dependencies from Debian 12's packages (idempotent).
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libyaml-cpp-dev libfmt-dev libspdlog-dev libtbb-dev libcli11-dev nlohmann-json3-dev
  libcurl4-openssl-dev libsqlite3-dev libpcre2-dev
  googletest libgtest-dev libgmock-dev libbenchmark-dev chromium
  python3 python3-torch python3-numpy python3-yaml
  python3-jsonschema  # validates results.jsonl, report.json and records against docs/schemas in the tests
  libtorch-dev python3-dev pybind11-dev  # headers for compiling load_inline CUDA candidates (eval.compile.cuda)
  slurm-wlm munge  # a one-host Slurm cluster for launcher slurm's test (plugins/eval/tests/slurm_cli_test.sh)
)

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
