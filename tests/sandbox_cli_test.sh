#!/usr/bin/env bash
# End to end: a missing sandbox is loud (plugins/eval/README.md, "The candidate sandbox").
#
#   tests/sandbox_cli_test.sh BUILD/core/kforge REPO_ROOT
#
# The real kforge runs the main job (pipelines/default.yaml, 2 tasks) where the candidate
# sandbox cannot have everything, simulated as users meet it:
#   - tests/lib/restricted.py's seccomp filters: no user namespaces (userns), no mount
#     namespaces (mountns), Docker's default for root (container: no namespaces, mounts),
#     seccomp refused (seccomp);
#   - a chroot (as root only: the kernel refuses user namespaces to a chrooted process) into
#     a root made of the host's own directories, so kforge and its tools are where they are.
# Each must stop the run before its first job (exit 2, the stage located, what is missing
# and what to do, nothing written), and with KFORGE_SANDBOX=partial run to the end with the
# weaker sandbox recorded: the warning, every compile and run verdict's metric
# sandbox_partial, the environment fact "sandbox" in results.jsonl, report.json and the
# Environment table of report.md. A full sandbox here records "sandbox": "full".
#
# Needs g++ and a Python with torch (exits 77, skipped, without them), and an x86_64 or
# aarch64 machine whose kforge gets a full sandbox to begin with.
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: $0 KFORGE_BINARY REPO_ROOT" >&2
  exit 2
fi
kforge=$(realpath "$1")
root=$(realpath "$2")
command -v g++ >/dev/null || { echo "skipped: no g++ for the C++ candidates"; exit 77; }
# shellcheck source=lib/torch_python.sh
source "$root/tests/lib/torch_python.sh"
restricted=("$KFORGE_PYTHON" "$root/tests/lib/restricted.py")

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export XDG_CACHE_HOME=$work/cache  # compiles of its own, as a fresh checkout's
pipeline=$root/pipelines/default.yaml
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# What this machine gives: the cases below are only meaningful from a full sandbox.
probe=$(cd "$root/plugins/eval/harness" && "$KFORGE_PYTHON" -m kforge_harness.sandbox probe --json)
if ! "$KFORGE_PYTHON" -c 'import json, sys; a = json.loads(sys.argv[1]); sys.exit(bool(a.get("error") or a["missing"]))' "$probe"; then
  echo "skipped: kforge's sandbox is not complete on this machine to begin with: $probe"
  exit 77
fi

# run_main_job NAME [PREFIX...]: the main job on 2 tasks into $work/NAME, its output in
# $work/NAME.log, its exit status in $rc.
run_main_job() {
  local name=$1
  shift
  rc=0
  "$@" "$kforge" run "$pipeline" --set limit=2 --out "$work/$name" --progress off >"$work/$name.log" 2>&1 || rc=$?
}

# expect_refused NAME MISSING [PREFIX...]: exit 2 at the compile stage, naming MISSING and
# the way out, and nothing written.
expect_refused() {
  local name=$1 missing=$2
  shift 2
  local started=$SECONDS
  run_main_job "$name" "$@"
  local log=$work/$name.log
  if ((rc != 2)); then
    fail "$name: exit $rc, not 2; the end of its output:"
    tail -n 20 "$log" >&2
    return
  fi
  for text in "default.yaml:" "error: stage 'compile' (eval.compile.cpp) cannot run here:" \
              "error: stage 'run' (eval.run) cannot run here:" "the candidate sandbox is incomplete on this machine" \
              "it lacks " "$missing (" "KFORGE_SANDBOX=partial"; do
    grep -qF -- "$text" "$log" || fail "$name: the refusal does not say '$text':$(printf '\n'; cat "$log")"
  done
  [[ ! -e $work/$name/results.jsonl ]] || fail "$name: a refused run wrote results.jsonl"
  echo "$name: refused before any job in $((SECONDS - started)) s (exit 2, names $missing)"
}

# expect_partial NAME MISSING [PREFIX...]: with KFORGE_SANDBOX=partial the run finishes,
# and the weaker sandbox is on record everywhere.
expect_partial() {
  local name=$1 missing=$2
  shift 2
  local started=$SECONDS
  run_main_job "$name" env KFORGE_SANDBOX=partial "$@"
  local log=$work/$name.log
  if ((rc != 0)); then
    fail "$name (partial): exit $rc, not 0; the end of its output:"
    tail -n 30 "$log" >&2
    return
  fi
  grep -qF "runs candidates in a partial sandbox" "$log" || fail "$name (partial): no warning at the start"
  "$KFORGE_PYTHON" - "$work/$name" "$missing" <<'PY' || fail "$name (partial): not recorded everywhere"
import json, sys
out, missing = sys.argv[1], sys.argv[2]
problems = []
jobs = [json.loads(line) for line in open(f"{out}/results.jsonl", encoding="utf-8")]
if len(jobs) != 4:
    problems.append(f"{len(jobs)} jobs, not 4")
# The weaker sandbox must still work: a job the harness or the host could not judge is
# no run at all (before: in a chroot every compile failed to enter its work dir).
for job in jobs:
    if job.get("error_class") in ("harness_error", "host_error"):
        problems.append(f"{job['task']}/{job['sample']}: {job['error_class']}: {job.get('message', '')[:300]}")
verdicts = 0
for job in jobs:
    for stage in job["stages"]:
        if stage["kind"] in ("eval.compile.cpp", "eval.run"):
            verdicts += 1
            if stage.get("metrics", {}).get("sandbox_partial") != 1:
                problems.append(f"{job['task']}/{job['sample']} {stage['stage']}: no metric sandbox_partial")
    fact = job.get("environment", {}).get("sandbox", "")
    if any(s["kind"] == "eval.run" for s in job["stages"]) and not (fact.startswith("partial: no ") and missing in fact):
        problems.append(f"{job['task']}/{job['sample']}: environment sandbox is {fact!r}")
if verdicts == 0:
    problems.append("no compile or run verdict at all")
report = json.load(open(f"{out}/report.json", encoding="utf-8"))
if not any(missing in e["facts"].get("sandbox", "") for e in report["environments"]):
    problems.append(f"report.json's environments: {report['environments']}")
markdown = open(f"{out}/report.md", encoding="utf-8").read()
environment = markdown[markdown.find("Environment"):]
if "partial: no " not in environment or missing not in environment:
    problems.append("report.md's Environment table does not show the partial sandbox")
for problem in problems:
    print("  " + problem, file=sys.stderr)
sys.exit(1 if problems else 0)
PY
  echo "$name: ran with KFORGE_SANDBOX=partial in $((SECONDS - started)) s, recorded on $(grep -c '' "$work/$name/results.jsonl") jobs"
}

# Here: a full sandbox, recorded as such.
run_main_job full
if ((rc != 0)); then
  fail "full: exit $rc; the end of its output:"
  tail -n 30 "$work/full.log" >&2
else
  grep -q '"sandbox":"full"' "$work/full/results.jsonl" || fail "full: results.jsonl does not record \"sandbox\": \"full\""
  ! grep -q 'sandbox_partial' "$work/full/results.jsonl" || fail "full: a verdict says sandbox_partial"
  echo "full: ran, \"sandbox\": \"full\" recorded"
fi

expect_refused userns user_namespace "${restricted[@]}" userns --
expect_refused mountns mount_namespace "${restricted[@]}" mountns --
expect_refused seccomp seccomp "${restricted[@]}" seccomp --
expect_refused container pid_namespace "${restricted[@]}" container --
expect_partial container pid_namespace "${restricted[@]}" container --

# A chroot into a directory (not a mount point: no new root can be pivoted from it, as
# in a chroot made by hand) holding the host's top-level directories (bound, with a /proc
# of its own), entered with chroot(2) as people do: from the mount and PID namespace of a
# PID 1 that stays outside it. The namespaces go with the command, and the mounts with them.
# The compile cache lies under $work, closed to every uid but root's (mktemp -d), as
# /root/.cache is: the partial sandbox must still reach it.
if [[ $(id -u) -eq 0 ]] && unshare --mount --pid --fork true 2>/dev/null; then
  chroot_root=$work/chroot-root
  mkdir -p "$chroot_root"
  in_chroot=(unshare --mount --pid --fork bash -c '
    root=$0
    mount --make-rprivate /
    mount -t tmpfs kforge-test-chroot "$root"
    root=$root/root
    mkdir "$root"
    for entry in /*; do
      name=${entry#/}
      if [[ -L $entry ]]; then
        ln -s "$(readlink "$entry")" "$root/$name"
      elif [[ -d $entry ]]; then
        mkdir "$root/$name"
        if [[ $name == proc ]]; then mount -t proc proc "$root/proc"; else mount --rbind "$entry" "$root/$name"; fi
      fi
    done
    # Not exec'"'"'d: this bash stays PID 1 outside the chroot, as an init would.
    rc=0
    chroot "$root" "$@" || rc=$?
    exit $rc' "$chroot_root")
  expect_refused chroot user_namespace "${in_chroot[@]}"
  grep -qF "kforge runs in a chroot" "$work/chroot.log" || fail "chroot: the refusal does not say it is a chroot"
  expect_partial chroot user_namespace "${in_chroot[@]}"
else
  echo "chroot: not tried (needs root and unshare --mount)"
fi

if ((failures > 0)); then
  echo "$failures failure(s)" >&2
  exit 1
fi
echo "PASS"
