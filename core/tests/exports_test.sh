#!/usr/bin/env bash
# libkforge.so exports its API and nothing else: every dynamic symbol it defines is a
# kforge:: name marked KFORGE_API, none of the loader's or the store's internals, none of the
# test kit's; and every declaration it exports is used by its two clients, the kforge
# command and libkforge_testing.so. libkforge_testing.so exports the test kit only.
#   exports_test.sh LIBKFORGE LIBKFORGE_TESTING KFORGE
set -euo pipefail
lib=$1 testing=$2 cli=$3
symbols=$(nm -DC --defined-only "$lib" | cut -d' ' -f3-)
stray=$(grep -v 'kforge::' <<<"$symbols" || true)
if [[ -n $stray ]]; then
  echo "libkforge exports symbols outside its API:"; echo "$stray" | head -20; exit 1
fi
internal=$(grep -E 'kforge::(loader|sql)::|kforge::Loader|kforge::testing::' <<<"$symbols" || true)
if [[ -n $internal ]]; then
  echo "libkforge exports internals or the test kit:"; echo "$internal" | head -20; exit 1
fi
grep -q 'kforge::load_pipeline' <<<"$symbols" || { echo "load_pipeline is not exported"; exit 1; }

kit=$(nm -DC --defined-only "$testing" | cut -d' ' -f3-)
stray=$(grep -v 'kforge::testing::' <<<"$kit" || true)
if [[ -n $stray ]]; then
  echo "libkforge_testing exports symbols outside the test kit:"; echo "$stray" | head -20; exit 1
fi
grep -q 'kforge::testing::StageHarness::process' <<<"$kit" || { echo "the test kit is not exported"; exit 1; }

# A declaration is a free function (with its parameters: overloads are declarations of
# their own), or a class with all its members (KFORGE_API marks a class whole):
# "kforge::Registry::stage(...)" and "vtable for kforge::Registry" are both
# kforge::Registry's. Each one libkforge exports must be used by one of its clients.
declarations() {
  sed -E 's/^(typeinfo name for|typeinfo for|vtable for|VTT for) //' |
    awk '{ name = $0; sub(/\(.*/, "", name); n = split(name, part, "::");
           if (n > 2 && part[n-1] ~ /^[A-Z]/) {
             owner = part[1]; for (i = 2; i < n; i++) owner = owner "::" part[i]; print owner
           } else print }' | sort -u
}
exported=$(declarations <<<"$symbols")
# Every symbol of the clients' own tables, defined or not: an exception class whose type
# information the command's `catch` compiled in (it has no key function) is used too.
used=$( { nm -C "$cli"; nm -C "$testing"; } | sed -E 's/^[0-9a-f ]* [A-Za-z] //' | grep 'kforge::' | declarations)
unused=$(comm -23 <(echo "$exported") <(echo "$used"))
if [[ -n $unused ]]; then
  echo "libkforge exports declarations neither the kforge command nor the test kit uses (drop their KFORGE_API):"
  echo "$unused"
  exit 1
fi
echo "libkforge exports $(wc -l <<<"$symbols") symbols of $(wc -l <<<"$exported") declarations, all used by the" \
  "kforge command or the test kit; libkforge_testing exports $(wc -l <<<"$kit") symbols of the kit"
