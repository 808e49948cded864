#!/usr/bin/env bash
# A real one-host Slurm cluster for tests and benchmarks: munged (as the munge user),
# slurmctld and slurmd from Debian 12's `munge` and `slurm-wlm`, one node with this
# machine's CPUs, everything (config, key, sockets, state, logs) under one directory and on
# ports of its own, so that it never touches /etc/slurm, /run/munge or another cluster on
# the host.
#
#   cluster.sh start DIR [CPUS]   start it; CPUS: the node's CPU count (default: nproc; more
#                                 than the machine has oversubscribes it, for benchmarks)
#   cluster.sh stop DIR           cancel its jobs, stop its daemons, leave DIR
#   SLURM_CONF=DIR/slurm.conf srun ...    use it
#
# `start` exits 77 saying why where a cluster cannot run here (not root, packages missing),
# 1 when one that should start does not (its logs are printed).
set -euo pipefail

usage() { echo "usage: $0 start DIR [CPUS] | stop DIR" >&2; exit 2; }
[ $# -ge 2 ] || usage
action=$1 dir=$2

log_tails() {
  for f in "$dir"/munge/munged.log "$dir"/slurmctld.log "$dir"/slurmd.log; do
    [ -f "$f" ] && { echo "--- $f"; tail -n 20 "$f"; }
  done >&2
  return 0
}

# Stops the process of a pid file: TERM, then KILL after 5 s.
stop_pid_file() {
  local file=$1 pid
  [ -f "$file" ] || return 0
  pid=$(cat "$file")
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$file"
}

stop() {
  [ -f "$dir/slurm.conf" ] || return 0
  export SLURM_CONF=$dir/slurm.conf
  # Jobs first: a step's slurmstepd outlives slurmd.
  if [ -f "$dir/slurmctld.pid" ]; then
    scancel --quiet --user="$(id -un)" 2>/dev/null || true
    # Pending, running and completing jobs are listed; done ones are not.
    for _ in $(seq 300); do
      [ -z "$(squeue --noheader 2>/dev/null)" ] && break
      sleep 0.1
    done
  fi
  stop_pid_file "$dir/slurmd.pid"
  stop_pid_file "$dir/slurmctld.pid"
  stop_pid_file "$dir/munge/munged.pid"
}

free_port() {
  local port
  for _ in $(seq 200); do
    port=$((20000 + RANDOM % 40000))
    if ! ss -Hltn "sport = :$port" 2>/dev/null | grep -q . && ! ss -Hltn "sport = :$((port + 1))" 2>/dev/null | grep -q .; then
      echo "$port"
      return 0
    fi
  done
  echo "no free pair of TCP ports found" >&2
  return 1
}

start() {
  local cpus=${1:-$(nproc)}
  if [ "$(id -u)" != 0 ]; then
    echo "skipped: a Slurm cluster needs root here (munged runs as the munge user, slurmd launches steps)"
    exit 77
  fi
  local missing=()
  for program in munged munge slurmctld slurmd srun scancel squeue sinfo ss runuser; do
    command -v "$program" >/dev/null || missing+=("$program")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "skipped: ${missing[*]} not installed (apt-get install slurm-wlm munge)"
    exit 77
  fi
  id munge >/dev/null 2>&1 || { echo "skipped: no munge user (install the munge package)"; exit 77; }

  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  chmod 755 "$dir"
  if ! runuser -u munge -- test -x "$dir"; then
    echo "$dir is not reachable by the munge user: make its parent directories traversable (chmod o+x)" >&2
    exit 1
  fi
  mkdir -p "$dir/munge" "$dir/state" "$dir/spool"
  # munged checks its files: the key readable by munge only, the socket's directory
  # traversable by everyone (clients run as any user).
  chown munge:munge "$dir/munge"
  chmod 711 "$dir/munge"
  if [ ! -f "$dir/munge/munge.key" ]; then
    dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
  fi
  chown munge:munge "$dir/munge/munge.key"
  chmod 400 "$dir/munge/munge.key"
  runuser -u munge -- munged --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/munged.seed" \
    || { echo "munged did not start" >&2; log_tails; exit 1; }

  local node port memory
  node=$(hostname -s)
  port=$(free_port)
  memory=$(slurmd -C | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p')
  cat >"$dir/slurm.conf" <<EOF
# Written by $0 for a test cluster; everything lives in $dir.
ClusterName=kforge-test
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
# No cgroups: a test host (a container, a VM) may not delegate them.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
# The node's CPUs as written here, even beyond the machine's (benchmarks oversubscribe it).
SlurmdParameters=config_overrides
ReturnToService=2
MinJobAge=10
KillWait=5
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=${memory:-1024} State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
  export SLURM_CONF=$dir/slurm.conf
  slurmctld -f "$SLURM_CONF" || { echo "slurmctld did not start" >&2; log_tails; stop; exit 1; }
  slurmd -f "$SLURM_CONF" || { echo "slurmd did not start" >&2; log_tails; stop; exit 1; }
  for _ in $(seq 300); do
    if [ "$(sinfo --noheader --format=%T 2>/dev/null | head -n 1)" = idle ]; then
      echo "SLURM_CONF=$SLURM_CONF"
      return 0
    fi
    sleep 0.1
  done
  echo "the test cluster's node did not become idle within 30 s: $(sinfo --noheader 2>&1 | head -n 1)" >&2
  log_tails
  stop
  exit 1
}

case $action in
  start) shift 2; start "$@" ;;
  stop) stop ;;
  *) usage ;;
esac
