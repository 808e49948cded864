#!/usr/bin/env bash
# End to end through the real CLI (issue 9): hostile candidates that go for what kforge
# keeps, run by kforge itself with an API key in its environment. They look for kforge.db
# and results.jsonl through /proc and append a forged pass (write_store), read the keys of
# every ancestor and leak them through their log and message (steal_keys), turn their log
# into a link to the server's environment (log_symlink), and write forged protocol lines
# on every descriptor (forge_result_line). Afterwards: every hostile job failed and the
# honest one passed, results.jsonl holds exactly one line per job and nothing forged, the
# store is intact (SQLite's integrity check) with the same jobs, and the key is nowhere
# in either.
# Usage: hostile_cli_test.sh KFORGE REPO. Exit 77 (skipped) without a Python with torch.
set -euo pipefail
kforge=$1 repo=$2
source "$repo/tests/lib/torch_python.sh"
cands=$repo/plugins/eval/harness/tests/data/candidates
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Candidates named as kernelbench.candidate_files expects: <task file>, then <stem>.N.py.
mkdir -p "$work/candidates"
cp "$cands/python_relu.py" "$work/candidates/relu.py"
n=1
for hostile in write_store steal_keys log_symlink forge_result_line; do
  cp "$cands/hostile_l3/$hostile.py" "$work/candidates/relu.$n.py"
  n=$((n + 1))
done

# write_store forges only stores beside this marker (unsandboxed, it would reach every
# run on the machine): this run's output directory carries it.
mkdir -p "$work/out"
touch "$work/out/kforge-attack-target"

secret="sk-kforge-cli-attack-0123456789abcdef"
(cd "$work" && OPENAI_API_KEY=$secret KFORGE_TEST_API_KEY=$secret \
  "$kforge" run "$repo/plugins/eval/tests/data/hostile-cpu.yaml" \
    --set suite="$repo/plugins/eval/tests/data/hostile" --set candidates="$work/candidates" \
    --out "$work/out" --no-cache --progress off --log-level warn >"$work/run.log" 2>&1) || true
[[ -s $work/out/results.jsonl ]] || { cat "$work/run.log"; exit 1; }

"$python" - "$work/out" "$secret" <<'PY'
import json, os, sqlite3, sys
out, secret = sys.argv[1], sys.argv[2]
with open(os.path.join(out, "results.jsonl"), "rb") as handle:
    raw = handle.read()
lines = [line for line in raw.splitlines() if line.strip()]
jobs = [json.loads(line) for line in lines]
failures = []
if len(jobs) != 5:
    failures.append(f"results.jsonl has {len(jobs)} lines, not one per job (5)")
if b'"attack"' in raw or b"42.0" in raw:
    failures.append("results.jsonl holds a forged line")
if secret.encode() in raw:
    failures.append("the API key is in results.jsonl")
for job in jobs:
    honest = os.path.basename(job["file"]) == "relu.py"
    if job["status"] != ("pass" if honest else "fail"):
        failures.append(f"{job['file']}: {job['status']} {job.get('error_class')}, "
                        f"not {'a pass' if honest else 'the candidate' + chr(39) + 's fail'}")
db_path = os.path.join(out, "kforge.db")
with open(db_path, "rb") as handle:
    if secret.encode() in handle.read():
        failures.append("the API key is in kforge.db")
db = sqlite3.connect(db_path)
if db.execute("PRAGMA integrity_check").fetchone()[0] != "ok":
    failures.append("kforge.db fails SQLite's integrity check")
dump = "\n".join(db.iterdump())
if secret in dump:
    failures.append("the API key is in kforge.db")
if '"attack"' in dump:
    failures.append("kforge.db holds a forged row")
for failure in failures:
    print("FAIL:", failure)
print(f"{len(jobs)} jobs: " + ", ".join(f"{os.path.basename(j['file'])} {j['status']}/"
                                        f"{j.get('error_class') or '-'}" for j in jobs))
sys.exit(1 if failures else 0)
PY
