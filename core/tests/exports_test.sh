#!/usr/bin/env bash
# libkforge.so exports its API and nothing else: every dynamic symbol it defines is a
# kforge:: name marked KFORGE_API, and none of the loader's or the store's internals.
set -euo pipefail
lib=$1
symbols=$(nm -DC --defined-only "$lib" | cut -d' ' -f3-)
stray=$(grep -v 'kforge::' <<<"$symbols" || true)
if [[ -n $stray ]]; then
  echo "libkforge exports symbols outside its API:"; echo "$stray" | head -20; exit 1
fi
internal=$(grep -E 'kforge::(loader|sql)::|kforge::Loader' <<<"$symbols" || true)
if [[ -n $internal ]]; then
  echo "libkforge exports internals:"; echo "$internal" | head -20; exit 1
fi
grep -q 'kforge::load_pipeline' <<<"$symbols" || { echo "load_pipeline is not exported"; exit 1; }
echo "libkforge exports $(wc -l <<<"$symbols") API symbols, nothing else"
