#!/usr/bin/env bash
# The main job on the embedded default: the bundled pipeline, no GPU and no API key.
# Installs and builds only what this run needs (scripts/test.sh installs and builds the rest).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${KFORGE_BUILD_DIR:-$root/build}
echo "demo: the first set-up installs Debian packages and builds the CLI and three plugins: about 3 minutes on an idle 2-core machine with a fast Debian mirror, longer on a loaded one (docs/performance.md#the-main-jobs-set-up-from-a-bare-debian-12); later runs start at once" >&2
start=$SECONDS
"$root/scripts/install-deps.sh" build
echo "demo: packages for the build ready in $((SECONDS - start)) s" >&2

# The run's Python packages (python3-torch and what it pulls: most of the packages' time)
# install while the build compiles; the run waits for them.
python_packages="" python_started=""
python_log=$build/install-deps-run.log
finish_python_packages() {
  [[ -n $python_packages ]] || return 0
  local pid=$python_packages
  python_packages=""
  if ! wait "$pid"; then
    echo "demo: installing the run's Python packages failed ($python_log):" >&2
    tail -n 20 "$python_log" >&2
    return 1
  fi
}
# Also when the build fails or is interrupted: apt is not left running behind the user's back.
trap '[[ -z $python_packages ]] || { echo "demo: waiting for the Python packages to finish installing" >&2; finish_python_packages || true; }' EXIT
if ! "$root/scripts/install-deps.sh" --check run 2>/dev/null; then
  # Ask for sudo's password now rather than in the middle of the build's output.
  if [[ $(id -u) -ne 0 ]]; then sudo -v; fi
  mkdir -p "$build"
  echo "demo: installing the run's Python packages in the background ($python_log)" >&2
  { "$root/scripts/install-deps.sh" run && echo "installed at $((SECONDS - start)) s"; } >"$python_log" 2>&1 &
  python_packages=$! python_started=1
fi

"$root/scripts/build.sh" run
echo "demo: build ready at $((SECONDS - start)) s" >&2
finish_python_packages
[[ -z $python_started ]] || echo "demo: Python packages $(tail -n 1 "$python_log")" >&2
trap - EXIT
exec "$build/core/kforge" run "$root/pipelines/default.yaml" \
  --out "${KFORGE_OUT:-$root/kforge-out/default}" "$@"
