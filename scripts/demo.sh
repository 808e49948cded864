#!/usr/bin/env bash
# The main job on the embedded default: the bundled pipeline, no GPU and no API key.
# Installs and builds only what this run needs (scripts/test.sh installs and builds the rest).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
echo "demo: the first set-up (Debian packages, then the build) took 25 minutes on a bare 2-core Debian 12 (packages 6.5, build 17.5, measured on a shared, loaded machine: docs/performance.md); later runs start at once" >&2
phase_start=$SECONDS
"$root/scripts/install-deps.sh" run
echo "demo: packages ready in $((SECONDS - phase_start)) s" >&2
phase_start=$SECONDS
"$root/scripts/build.sh" run
echo "demo: build ready in $((SECONDS - phase_start)) s" >&2
exec "${KFORGE_BUILD_DIR:-$root/build}/core/kforge" run "$root/pipelines/default.yaml" \
  --out "${KFORGE_OUT:-$root/kforge-out/default}" "$@"
