"""Reads what `kforge export --format kernelbench` wrote as KernelBench's own scripts would,
scores it by KernelBench's fast_p rule, and checks the numbers against kforge's own output.

KernelBench's scorer (scripts/benchmark_eval_analysis.py with src/score.py) counts every
problem of the level (a problem without an entry is incorrect), takes the baseline's "mean"
and the entry's "runtime" (a mean too), and for each p counts problems that are correct with
baseline / runtime > p, over all problems. With several samples per problem this script takes
the best correct sample (smallest runtime), kforge's best-of-k. The same score is computed
from the timing statistics eval.run recorded in results.jsonl (candidate_ms_mean,
reference_ms_mean, ...), every exported runtime_stats is compared with them, and the correct
count with report.json's solved tasks. (report.json's own fast_p compares medians, another
statistic, so it is not expected to match at every p.) Written for kforge's tests; no
KernelBench code is used.

    python3 roundtrip_check.py EVAL_RESULTS BASELINE KERNELBENCH_LEVEL_DIR LEVEL RESULTS_JSONL REPORT_JSON
"""

import json
import os
import re
import sys

ENTRY_KEYS = ["sample_id", "compiled", "correctness", "metadata", "runtime", "runtime_stats"]


def check_shapes(eval_results, baseline, level):
    """Keys, types and units as KernelBench writes them."""
    assert isinstance(eval_results, dict), "eval_results.json is an object keyed by problem id"
    for problem, entries in eval_results.items():
        assert re.fullmatch(r"[0-9]+", problem), f"problem key {problem!r} is not a problem id"
        assert isinstance(entries, list) and entries, f"problem {problem}: a non-empty list of samples"
        for entry in entries:
            assert list(entry) == ENTRY_KEYS, f"problem {problem}: keys {list(entry)}"
            assert isinstance(entry["sample_id"], int)
            assert isinstance(entry["compiled"], bool) and isinstance(entry["correctness"], bool)
            assert isinstance(entry["metadata"], dict) and isinstance(entry["runtime_stats"], dict)
            assert isinstance(entry["runtime"], float)
            for key in ("hardware", "device"):
                assert isinstance(entry["metadata"].get(key), str), f"metadata.{key}"
            if entry["correctness"]:
                assert entry["runtime"] > 0, "a correct timed sample has a runtime (ms)"
                assert entry["runtime_stats"]["mean"] == entry["runtime"]
                assert isinstance(entry["runtime_stats"]["hardware"], str)
            else:
                assert entry["runtime"] == -1.0 and entry["runtime_stats"] == {}
    assert list(baseline) == [f"level{level}"], f"baseline keys {list(baseline)}"
    for name, stats in baseline[f"level{level}"].items():
        assert name.endswith(".py"), f"baseline key {name!r} is a problem file name"
        assert isinstance(stats["mean"], float) and stats["mean"] > 0


def score(eval_results, baseline, level_dir, level):
    """fast_p for KernelBench's thresholds, as (count, total) per p, and the correct count."""
    problems = {}
    for name in os.listdir(level_dir):
        match = re.fullmatch(r"([0-9]+)_.*\.py", name)
        if match:
            problems[int(match.group(1))] = name
    timings = baseline[f"level{level}"]
    correct_runtime = {}
    for problem, entries in eval_results.items():
        runtimes = [entry["runtime"] for entry in entries if entry["correctness"]]
        if runtimes:
            correct_runtime[int(problem)] = min(runtimes)
    total = len(problems)
    result = {"correct": len(correct_runtime), "total": total, "fast_p": {}}
    for p in (0.0, 0.5, 0.8, 1.0, 1.5, 2.0):
        count = 0
        for problem, runtime in correct_runtime.items():
            speedup = timings[problems[problem]]["mean"] / runtime
            count += speedup > p
        result["fast_p"][p] = (count, total)
    return result


STATS = {"mean": "ms_mean", "std": "ms_std", "min": "ms_min", "max": "ms_max", "num_trials": "timing_trials"}


def measured(results_path, level):
    """{problem id: {sample: eval.run's metrics}} of the passing jobs in results.jsonl that
    were timed (the last stage verdict that carries a candidate mean)."""
    out = {}
    with open(results_path, encoding="utf-8") as f:
        for line in f:
            job = json.loads(line)
            match = re.fullmatch(rf"level{level}/([0-9]+)_.*", job["task"])
            if not match or job["status"] != "pass":
                continue
            timed = [s["metrics"] for s in job["stages"] if "candidate_ms_mean" in s.get("metrics", {})]
            if timed:
                out.setdefault(int(match.group(1)), {})[job["sample"]] = timed[-1]
    return out


def check_statistics(eval_results, baseline, level_dir, level, metrics):
    """Every exported runtime_stats and baseline entry holds what eval.run measured; the
    KernelBench-rule score of the export equals the one computed from those metrics."""
    names = {int(n.split("_")[0]): n for n in os.listdir(level_dir) if re.fullmatch(r"[0-9]+_.*\.py", n)}
    timings = baseline[f"level{level}"]
    expected_runtime, expected_baseline = {}, {}
    for problem, samples in metrics.items():
        # The export's baseline is the reference timed for the problem's first sample (the
        # store's job order): a confirmed speedup re-times the reference for its own sample,
        # so samples of one problem may hold different reference statistics.
        first = samples[min(samples)]
        for sample, m in samples.items():
            entry = next(e for e in eval_results[str(problem)] if e["sample_id"] == sample)
            for field, suffix in STATS.items():
                assert entry["runtime_stats"][field] == m[f"candidate_{suffix}"], (problem, sample, field)
            expected_runtime[problem] = min(expected_runtime.get(problem, float("inf")), m["candidate_ms_mean"])
        for field, suffix in STATS.items():
            got = timings[names[problem]][field]
            assert got == first[f"reference_{suffix}"], (problem, field, got)
        expected_baseline[problem] = first["reference_ms_mean"]
        assert timings[names[problem]]["num_trials"] >= 1
    fast_p = {}
    for p in (0.0, 0.5, 0.8, 1.0, 1.5, 2.0):
        count = sum(expected_baseline[i] / runtime > p for i, runtime in expected_runtime.items())
        fast_p[p] = (count, len(names))
    return fast_p


def main(eval_path, baseline_path, level_dir, level, results_path, report_path):
    with open(eval_path, encoding="utf-8") as f:
        eval_results = json.load(f)
    with open(baseline_path, encoding="utf-8") as f:
        baseline = json.load(f)
    with open(report_path, encoding="utf-8") as f:
        report = json.load(f)
    check_shapes(eval_results, baseline, level)
    mine = score(eval_results, baseline, level_dir, level)
    metrics = measured(results_path, level)
    theirs = check_statistics(eval_results, baseline, level_dir, level, metrics)
    print(f"KernelBench-rule score from the export: {mine}")
    print(f"the same rule on eval.run's metrics in results.jsonl: {theirs}")
    assert metrics, "no timed passing job in results.jsonl: the round trip measured nothing"
    assert mine["fast_p"] == theirs, f"fast_p differs: export {mine['fast_p']} vs results.jsonl {theirs}"
    assert mine["correct"] == report["summary"]["solved"]["count"], "correct problems differ from solved tasks"
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6]))
