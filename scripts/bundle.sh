#!/usr/bin/env bash
# A relocatable kforge for a host that lacks its C++ libraries (a GPU host with only CUDA
# and PyTorch, say): installs the build into DIR, copies in the shared libraries it links
# beyond glibc and libstdc++, and writes DIR/bin/kforge-run, which sets the library path.
#
#   scripts/bundle.sh DIR          # after scripts/build.sh
#   DIR/bin/kforge-run run pipelines/triton-gpu.yaml
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${KFORGE_BUILD_DIR:-$root/build}
dir=${1:?usage: scripts/bundle.sh DIR}
cmake --install "$build" --prefix "$dir" >/dev/null
dir=$(cd "$dir" && pwd)
for f in "$dir"/bin/kforge "$dir"/lib/libkforge.so* "$dir"/lib/kforge/plugins/*.so; do ldd "$f"; done |
  awk '/=> \//{print $3}' | sort -u |
  grep -vE '/(libc|libm|libstdc\+\+|libgcc_s|ld-linux-x86-64|libpthread|libdl|librt|libresolv)\.so' |
  while read -r lib; do cp -Ln "$lib" "$dir/lib/"; done
strip --strip-debug "$dir"/bin/kforge "$dir"/lib/*.so* "$dir"/lib/kforge/plugins/*.so "$dir"/lib/kforge/arena/*.so 2>/dev/null || true
cat >"$dir/bin/kforge-run" <<'RUN'
#!/usr/bin/env bash
here=$(cd "$(dirname "$0")/.." && pwd)
LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$here/bin/kforge" "$@"
RUN
chmod +x "$dir/bin/kforge-run"
echo "bundled into $dir ($(du -sh "$dir" | cut -f1)); run $dir/bin/kforge-run"
