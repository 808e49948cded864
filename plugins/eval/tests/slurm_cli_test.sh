#!/usr/bin/env bash
# End to end on a real one-host Slurm cluster (issue 21), through the real CLI:
#   1. outside an allocation: the bundled references pipeline (reference-cpu.yaml) with
#      launcher slurm, 2 servers (each its own job), on the CPU; one server's step is
#      scancel'd while it runs a request. Its request is sent again to the other server
#      (counted in the report's infrastructure retries, never the candidate's verdict), a
#      replacement step starts, and every job gets its right verdict exactly once;
#   2. across allocations: the same pipeline inside an sbatch allocation whose job is
#      cancelled mid-run (kforge and its steps get SIGTERM, as at a time limit), then
#      `--resume` in a second allocation: every job once, each verdict right.
# Then it stops the cluster it started. Usage: slurm_cli_test.sh KFORGE REPO. Exit 77
# (skipped, saying why) without a Python with torch, without root, or without slurm-wlm
# and munge installed.
set -euo pipefail
kforge=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
repo=$2
source "$repo/tests/lib/torch_python.sh"
pipeline=$repo/plugins/eval/tests/data/reference-cpu.yaml
work=$(mktemp -d)
chmod 711 "$work"  # munged runs as the munge user
cluster=$work/cluster
run_pid=""
cleanup() {
  [[ -n $run_pid ]] && kill "$run_pid" 2>/dev/null && wait "$run_pid" 2>/dev/null
  bash "$repo/plugins/eval/tests/slurm/cluster.sh" stop "$cluster" || true
  rm -rf "$work"
}
trap cleanup EXIT

# Four CPUs on the node whatever the machine has: two servers of one CPU each, their
# replacements, and an sbatch allocation's own step beside them.
status=0
bash "$repo/plugins/eval/tests/slurm/cluster.sh" start "$cluster" 4 >"$work/cluster.log" 2>&1 || status=$?
if [[ $status -eq 77 ]]; then cat "$work/cluster.log"; exit 77; fi
[[ $status -eq 0 ]] || { cat "$work/cluster.log"; exit 1; }
export SLURM_CONF=$cluster/slurm.conf

slurm_args=(--set run.launcher=slurm --set run.servers=2 --set run.cpus_per_server=1 --set run.max_children=1
            --set run.slurm_time=20 --set run.trials=20 --progress off --log-level warn)

lines() { [[ -f $1 ]] && wc -l <"$1" || echo 0; }
# The job steps of this cluster's harness servers: "JOB.STEP" per line.
harness_steps() { squeue --noheader --steps --format='%i %j' | awk '$2 == "kforge-harness" {print $1}'; }
wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...: until COMMAND succeeds
  local limit=$1 what=$2
  shift 2
  for _ in $(seq $((limit * 10))); do "$@" && return 0; sleep 0.1; done
  echo "timed out after ${limit}s waiting for $what" >&2
  return 1
}
results_at_least() { [[ $(lines "$1") -ge $2 ]]; }
two_steps() { [[ $(harness_steps | wc -l) -ge 2 ]]; }

# ---- 1. a step cancelled mid-run, outside an allocation
out=$work/outside
"$kforge" run "$pipeline" --out "$out" "${slurm_args[@]}" >"$work/outside.log" 2>&1 &
run_pid=$!
wait_for 600 "two harness steps and the first results" bash -c "
  [[ \$(squeue --noheader --steps --format='%j' | grep -c '^kforge-harness\$') -ge 2 ]] &&
  [[ -f '$out/results.jsonl' ]] && [[ \$(wc -l <'$out/results.jsonl') -ge 4 ]]" ||
  { kill "$run_pid"; cat "$work/outside.log"; exit 1; }
before=$(harness_steps | sort)
victim=${before%%$'\n'*}
scancel "$victim"
echo "cancelled step $victim after $(lines "$out/results.jsonl") results"
replacement() { harness_steps | grep -v -x -F "$before" | grep -q .; }
wait_for 300 "a replacement for step $victim" replacement || { kill "$run_pid"; cat "$work/outside.log"; exit 1; }
status=0
wait "$run_pid" || status=$?
run_pid=""
[[ $status -eq 0 ]] || { echo "kforge run exited $status"; cat "$work/outside.log"; exit 1; }

# ---- 2. an allocation cancelled mid-run, resumed in another
out2=$work/across
batch() {  # batch NAME ARGS...: an sbatch job of 2 CPUs running kforge with ARGS; prints its id
  local name=$1
  shift
  sbatch --parsable --job-name="$name" --ntasks=1 --cpus-per-task=2 --output="$work/$name.log" \
    --wrap="$(printf '%q ' "$kforge" run "$pipeline" --out "$out2" "${slurm_args[@]}" "$@")"
}
first=$(batch first-allocation)
wait_for 600 "results in the first allocation" results_at_least "$out2/results.jsonl" 6 ||
  { scancel "$first"; cat "$work/first-allocation.log"; exit 1; }
scancel "$first"
wait_for 60 "the first allocation to end" bash -c "[[ -z \$(squeue --noheader --jobs=$first 2>/dev/null) ]]"
done_first=$(lines "$out2/results.jsonl")
echo "first allocation cancelled after $done_first results"
second=$(batch second-allocation --resume)
wait_for 900 "the second allocation to end" bash -c "[[ -z \$(squeue --noheader --jobs=$second 2>/dev/null) ]]"
grep -q "skipped (done before)" "$work/second-allocation.log" ||
  { echo "the second allocation did not resume:"; cat "$work/second-allocation.log"; exit 1; }

"$python" - "$repo" "$work" "$victim" <<'PY'
import json, os, re, sqlite3, sys
repo, work, victim = sys.argv[1:]

manifest = open(os.path.join(repo, "examples/kernelbench-mini/manifest.yaml")).read()
tasks = len(re.findall(r"^  - file: ", manifest, re.M))

def expected_class(task_id):
    """`# expect: CLASS` on a task file's first line (027: task_error), else pass."""
    path = os.path.join(repo, "examples/kernelbench-mini/tasks", task_id + ".py")
    found = re.match(r"# expect: (\S+)", open(path).readline())
    return found.group(1) if found else "pass"

def check(name):
    out = os.path.join(work, name)
    with open(os.path.join(out, "results.jsonl")) as f:
        results = [json.loads(line) for line in f]
    seen = {}
    for r in results:
        seen.setdefault(r["task"], []).append(r)
    twice = {t: len(rs) for t, rs in seen.items() if len(rs) != 1}
    assert not twice, f"{name}: jobs with more than one result: {twice}"
    assert len(seen) == tasks, f"{name}: {len(seen)} tasks have a result, {tasks} expected"
    wrong = [(r["task"], r["status"], r["error_class"], r["message"][:300]) for r in results
             if (r["status"] if r["status"] == "pass" else r["error_class"]) != expected_class(r["task"])]
    assert not wrong, f"{name}: wrong verdicts: {wrong}"
    db = sqlite3.connect(f"file:{os.path.join(out, 'kforge.db')}?mode=ro", uri=True)
    stored = db.execute("SELECT count(*), count(DISTINCT task_id || '/' || sample) FROM jobs").fetchone()
    assert stored[0] == stored[1] == tasks, f"{name}: the store holds {stored[0]} job rows for {stored[1]} jobs"
    # Every job ran on a server Slurm placed: its device names the node, its environment the host.
    for r in results:
        if r["status"] == "pass":
            assert "/" in r.get("device", ""), f"{name}: {r['task']} ran on device {r.get('device')!r}"
            assert r.get("environment", {}).get("host"), f"{name}: {r['task']} has no host"
    retried = db.execute("SELECT count(*), coalesce(sum(json_extract(metrics, '$.infra_retries')), 0) "
                         "FROM attempts WHERE json_extract(metrics, '$.infra_retries') > 0").fetchone()
    print(f"{name}: {len(results)}/{tasks} jobs, each verdict right and once; "
          f"{retried[1]} requests sent again after a lost server ({retried[0]} verdicts)")
    return retried

retried = check("outside")
report = json.load(open(os.path.join(work, "outside", "report.json")))
assert report["summary"]["infra_retries"] == retried[1], (report["summary"]["infra_retries"], retried)
assert retried[1] >= 1, f"no request was sent again after step {victim} was cancelled mid-request"
check("across")
PY
echo "slurm: a cancelled step's requests were retried, an allocation's run resumed in another"
