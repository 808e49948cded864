#!/bin/bash
# A stand-in for Slurm's srun in unit tests (harness_launcher_test.cpp), installed there as
# `srun` first on PATH: it places the step on a made-up node (what launcher slurm's
# placement line reads) and becomes the command after `--`, so the real harness server
# runs with this process's pid. Behaviour from SLURM_FAKE_* variables (launcher slurm
# passes SLURM_* on to srun):
#   SLURM_FAKE_NODES         nodes to place on: the first not in --exclude (default node-a)
#   SLURM_FAKE_MODE          place (default), pending (never placed; on SIGTERM it logs
#                            "withdrawn" and exits, as srun withdraws a pending job), refuse
#                            (exits 1 as srun does for a bad partition)
#   SLURM_FAKE_PENDING_ONCE  a path: the first srun to create it stays pending, later ones place
#   SLURM_FAKE_LOG           a file each call appends a line to: "srun ARGS..." and events
log() { [ -n "${SLURM_FAKE_LOG:-}" ] && echo "$*" >>"$SLURM_FAKE_LOG"; return 0; }
log "srun $*"
exclude=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  case $1 in --exclude=*) exclude=${1#--exclude=} ;; esac
  shift
done
shift  # the --
mode=${SLURM_FAKE_MODE:-place}
if [ -n "${SLURM_FAKE_PENDING_ONCE:-}" ] && mkdir "$SLURM_FAKE_PENDING_ONCE" 2>/dev/null; then mode=pending; fi
case $mode in
  refuse)
    echo "srun: error: Unable to allocate resources: Invalid partition name specified" >&2
    exit 1
    ;;
  pending)
    echo "srun: job $$ queued and waiting for resources" >&2
    trap 'log "withdrawn $$"; exit 1' TERM
    while :; do sleep 0.1; done
    ;;
esac
node=""
for candidate in ${SLURM_FAKE_NODES:-node-a}; do
  case ",$exclude," in
    *",$candidate,"*) ;;
    *) node=$candidate; break ;;
  esac
done
if [ -z "$node" ]; then
  echo "srun: error: Unable to allocate resources: Requested node configuration is not available" >&2
  exit 1
fi
log "placed $$ on $node"
export SLURMD_NODENAME=$node SLURM_JOB_ID=$$ SLURM_STEP_ID=0
exec "$@"
