#!/usr/bin/env bash
# The main job's build (`scripts/build.sh run`, target kforge_main_job, which scripts/demo.sh
# builds on a fresh machine) holds every plugin pipelines/default.yaml loads: the pipeline
# validates with those plugins alone, and is refused when one of them is missing.
#
#   tests/main_job_plugins_test.sh KFORGE_BINARY REPO_ROOT PLUGIN_FILE...
#
# The binary runs from a copy outside the build tree, which searches only KFORGE_PLUGIN_PATH
# (a binary in the build tree also loads every plugin the full build made).
set -euo pipefail
if [[ $# -lt 3 ]]; then
  echo "usage: $0 KFORGE_BINARY REPO_ROOT PLUGIN_FILE..." >&2
  exit 2
fi
kforge=$1 root=$2
shift 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin" "$work/plugins"
cp "$kforge" "$work/bin/kforge"
cp "$@" "$work/plugins/"
unset KFORGE_PLUGIN_PATH

validate() { KFORGE_PLUGIN_PATH=$work/plugins "$work/bin/kforge" validate "$root/pipelines/default.yaml" 2>&1; }

if ! out=$(validate); then
  echo "FAIL: pipelines/default.yaml does not validate with the main job's plugins ($(cd "$work/plugins" && echo *)):"
  echo "$out"
  echo "add the plugin it needs to KFORGE_MAIN_JOB_PLUGINS (CMakeLists.txt)"
  exit 1
fi
echo "$out" | head -n 1
for plugin in "$@"; do
  name=$(basename "$plugin")
  mv "$work/plugins/$name" "$work"
  if out=$(validate); then
    echo "FAIL: pipelines/default.yaml validates without $name: the main job builds a plugin it does not need, or the binary loaded another copy"
    exit 1
  fi
  echo "without $name: $(echo "$out" | grep -m 1 -o "unknown [a-z]* kind '[^']*'")"
  mv "$work/$name" "$work/plugins/"
done
