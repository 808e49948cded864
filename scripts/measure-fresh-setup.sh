#!/usr/bin/env bash
# Measures the main job's set-up from a bare Debian 12: debootstraps bookworm (or unpacks a
# tarball of one), clones this repository's committed HEAD into it, and runs
# `bash scripts/demo.sh` there as the real root of a private mount and PID namespace
# (pivot_root, the old root unmounted: not a chroot), on 2 CPUs (taskset -c 0,1).
# The demo prints the time of each phase (packages, build); this prints the whole, its CPU
# time, and the load of the machine beside it.
#
#   sudo scripts/measure-fresh-setup.sh WORKDIR [BASE.tar]
#
# WORKDIR receives the root (WORKDIR/root, removed first), the log (WORKDIR/demo.log) and the
# machine's load average every 10 s (WORKDIR/load.log).
# BASE.tar: a tarball of a bare `debootstrap --variant=minbase bookworm` root, to skip the bootstrap (its time
# is not part of the set-up); without it, the bootstrap runs and is saved as WORKDIR/base.tar.
# Needs root (debootstrap, mounts), debootstrap, and deb.debian.org reachable.
set -euo pipefail
[[ $# -ge 1 ]] || { sed -n 2,15p "$0" >&2; exit 2; }
[[ $(id -u) -eq 0 ]] || { echo "measure-fresh-setup: run as root (debootstrap and mounts need it)" >&2; exit 2; }
work=$(realpath -m "$1")
base=${2:-}
repo=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$work"
root=$work/root
rm -rf "$root"
mkdir -p "$root"

if [[ -z $base ]]; then
  base=$work/base.tar
  if [[ ! -f $base ]]; then
    echo "measure-fresh-setup: debootstrap bookworm (not counted in the set-up)" >&2
    debootstrap --variant=minbase bookworm "$work/base" http://deb.debian.org/debian >"$work/debootstrap.log"
    tar -C "$work/base" -cf "$base" .
    rm -rf "$work/base"
  fi
fi
tar -C "$root" -xf "$base"
# The checkout lands where a new user working as root would clone it: /root/kforge of the
# new root file system (not of this machine).
git clone -q --no-local "$repo" "$root/root/kforge"
echo "measure-fresh-setup: $(git -C "$root/root/kforge" log -1 --format='%h %s')" >&2

# Runs inside the new namespaces: mounts what a booted machine has, makes $root the root.
inner=$(cat <<'INNER'
set -euo pipefail
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8
root=$1
mount --make-rprivate /
mount --bind "$root" "$root"
mount -t proc proc "$root/proc"
mount --rbind /dev "$root/dev"
mount --rbind /sys "$root/sys"
mount -t tmpfs tmpfs "$root/tmp"
cp /etc/resolv.conf "$root/etc/resolv.conf"
mkdir -p "$root/.old-root"
cd "$root"
pivot_root . .old-root
umount -l /.old-root
rmdir /.old-root
cd /root/kforge
start=$(date +%s)
set +e
bash scripts/demo.sh
rc=$?
echo "measure-fresh-setup: demo.sh exit $rc after $(( $(date +%s) - start )) s (set-up and run)" >&2
# The CPU time of everything it ran (user, then system): unlike the wall clock, other work
# on the machine inflates it little.
# (`times` itself, not in a command substitution: a subshell has no children of its own.)
times >/tmp/measure-times
echo "measure-fresh-setup: CPU time of the set-up and run (user, system): $(tail -n 1 /tmp/measure-times)" >&2
exit $rc
INNER
)
# The machine's load beside the measurement, every 10 s, to judge the wall clock by.
echo "measure-fresh-setup: load average before: $(cat /proc/loadavg)" | tee "$work/demo.log" >&2
(while sleep 10; do echo "$(date +%s) $(cat /proc/loadavg)"; done) >"$work/load.log" &
sampler=$!
start=$(date +%s)
set +e
taskset -c 0,1 unshare --mount --pid --fork env -i bash -c "$inner" inner "$root" 2>&1 | tee -a "$work/demo.log"
rc=${PIPESTATUS[0]}
kill "$sampler"
echo "measure-fresh-setup: load average after: $(cat /proc/loadavg); mean of the 1-minute load during: $(awk '{s += $2; n++} END {printf "%.1f over %d samples", s / n, n}' "$work/load.log")" | tee -a "$work/demo.log" >&2
echo "measure-fresh-setup: $(( $(date +%s) - start )) s in all on $(nproc --all) host CPUs limited to 2; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')" | tee -a "$work/demo.log" >&2
exit $rc
