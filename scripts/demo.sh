#!/usr/bin/env bash
# The main job on the embedded default: the bundled pipeline, no GPU and no API key.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
exec "${KFORGE_BUILD_DIR:-$root/build}/core/kforge" run "$root/pipelines/default.yaml" \
  --out "${KFORGE_OUT:-$root/kforge-out/default}" "$@"
