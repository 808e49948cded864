#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs every test under ctest.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh" all
"$root/scripts/build.sh" all
cd "${KFORGE_BUILD_DIR:-$root/build}"
ctest --output-on-failure -j "$(nproc)" --timeout 600
