#!/usr/bin/env bash
# Installs kforge into a scratch prefix, builds examples/plugin-hello and its tests against
# it with find_package(kforge), runs the tests (the stage on the installed test kit), and
# has the installed binary load and run the plugin.
set -euo pipefail
build_dir=$1 example=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix
cmake --install "$build_dir" --prefix "$prefix" >/dev/null
cmake -S "$example" -B "$work/build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_INSTALL_PREFIX="$work/plugin-prefix" >/dev/null
cmake --build "$work/build" >/dev/null
ctest --test-dir "$work/build" --output-on-failure
cmake --install "$work/build" >/dev/null
plugin_dir=$work/plugin-prefix/lib/kforge/plugins
test -f "$plugin_dir/libkforge_hello.so"

# As the README: the installed kforge on PATH, the plugin's directory on KFORGE_PLUGIN_PATH.
export PATH=$prefix/bin:$PATH
export KFORGE_PLUGIN_PATH=$plugin_dir
test "$(command -v kforge)" = "$prefix/bin/kforge"
# The installed binary finds its bundled plugins in its own prefix and the new one on the path.
kforge plugins list | tee "$work/list.txt"
grep -q "hello.greet" "$work/list.txt"
grep -q "kernelbench.suite" "$work/list.txt"
if grep -q "demo\." "$work/list.txt"; then echo "the demo plugin is installed as a product plugin"; exit 1; fi
# Into a file, not a pipe: grep -q leaves at its first match, and kforge (stdout line-buffered)
# would die of SIGPIPE writing the rest.
kforge plugins describe hello.greet >"$work/describe.txt"
grep -q "greeting" "$work/describe.txt"
kforge run "$example/pipeline.yaml" --out "$work/out" --log-level warn
test "$(wc -l < "$work/out/results.jsonl")" -eq 3
grep -q '"status":"pass"' "$work/out/results.jsonl"
grep -q 'hello.greet' "$work/out/results.jsonl"
echo "out-of-tree plugin: built, installed, loaded and run"
