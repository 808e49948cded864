#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs every test under ctest.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh" all
"$root/scripts/build.sh" all
cd "${KFORGE_BUILD_DIR:-$root/build}"
if ! ctest --output-on-failure -j "$(nproc)" --timeout 600; then
  # A long run's output is often read from its tail alone (CI keeps the last lines):
  # the failed assertions come again last, each with its traceback.
  "$root/scripts/failures.sh" Testing/Temporary/LastTest.log
  exit 8
fi
