#!/usr/bin/env bash
# The engine knows no plugin by name: no string literal in core/src or core/cli names a
# bundled plugin's kind, and none spells out a well-known name of kforge/abi.h (KF_KEY_*,
# KF_METRIC_*, KF_TIMING_*, KF_ERROR_*, KF_TASK_FORMAT_*) instead of using its macro, so
# what the reports read is what the SDK tells a plugin's author. A few well-known values are
# also keys of the output files (report.json's "speedup", the exports' "runtime_error"):
# those are allowed, and only those.
#
#   core/tests/no_plugin_names_test.sh SOURCE_DIR
set -euo pipefail
root=$1
# Code lines only: whole-line comments are prose.
code() { grep -rnE --include='*.cpp' --include='*.hpp' --include='*.in' "$1" "$root/core/src" "$root/core/cli" |
  grep -vE '^[^:]+:[0-9]+:\s*(//|\*)' || true; }

found=0
kinds=$(code '"(eval|llm|demo|kernelbench|tasks|candidates)\.[a-z]')
if [[ -n $kinds ]]; then
  echo "bundled plugins' kind names in the engine:"; echo "$kinds"; found=1
fi
# Output keys and pipeline keys that happen to equal a well-known value.
output_keys=" speedup trials max_rel_error runtime_error timeout "
values=$(grep -oE '^#define KF_(KEY|METRIC|TIMING|ERROR|TASK_FORMAT)_[A-Z0-9_]+ "[^"]+"' \
  "$root/core/include/kforge/abi.h" | sed -E 's/.* "(.*)"$/\1/')
[[ -n $values ]] || { echo "no well-known names found in abi.h"; exit 1; }
for value in $values; do
  [[ $output_keys == *" $value "* ]] && continue
  hits=$(code "\"$(sed 's/[.]/\\./g' <<<"$value")\"")
  if [[ -n $hits ]]; then
    echo "\"$value\" is spelled out where its kforge/abi.h macro belongs:"; echo "$hits"; found=1
  fi
done
[[ $found == 0 ]] || exit 1
echo "core names no bundled kind and spells out no well-known name ($(wc -w <<<"$values") checked)"
