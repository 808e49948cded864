"""Checks the evaluation harness on a device through its wire protocol (PROTOCOL.md), the
way the C++ stages drive it: one `kforge_harness serve` process, JSON lines over pipes,
several requests in flight. gpu_smoke.sh runs it on a GPU host, where the kforge binary
may not build (its C++ libraries may be missing there).

Sections (--sections, comma-separated):
  reference      the reference of every bundled task as its own candidate: must pass
  triton         candidates/triton: check -> compile -> run (timed): must pass
  broken_triton  candidates/broken_triton: each must land in its `# expect:` class; after
                 them a good candidate must still pass (a device fault poisons only its child)
  cuda, broken_cuda  the same for the load_inline CUDA candidates (their build is
                 load_inline's, inside the child: the C++ stage eval.compile.cuda is not used)
  cpp, broken    the same for the C++ candidates (a CPU dry run of this script)
  timing         the harness's tests/data/candidates/timing_gpu: hostile Triton and CUDA
                 candidates that fool a naive timing (a private stream, memoizing by
                 pointer or shape, a lazy tensor subclass): compile -> timed run, no L1
                 check (L1 rejects some of them; the timing's own guards are checked
                 here), each must land in its `# expect:` class; skipped on a CPU device
  kbx            kernelbenchx tasks (examples/kernelbenchx/tasks, whose test code runs
                 on cuda when there is one): every reference as its own candidate, and the
                 Triton candidates of pipelines/kernelbenchx.yaml (examples/kernelbenchx/triton):
                 check -> compile -> run (timed) under KernelBenchX's tolerances: must pass

  python3 gpu_check.py --device cuda:0 --profile full
  /usr/bin/python3 gpu_check.py --device cpu --profile small --sections reference,cpp,broken

Exit status: 0 when every row is as expected, 1 otherwise.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
HARNESS_DIR = os.path.join(REPO, "plugins", "eval", "harness")
SUITE = os.path.join(REPO, "examples", "kernelbench-mini")
EXPECT = re.compile(r"^# expect: (\w+)", re.MULTILINE)
KBX_TASKS = os.path.join(HARNESS_DIR, "tests", "data", "tasks", "kbx")
KBX_TRITON = os.path.join(HERE, "data", "kbx-triton")
# eval.run's tolerance preset kernelbenchx.
KBX_RULE = {"kind": "allclose",
            "atol": {"float64": 1e-5, "float32": 1e-5, "float16": 5e-3, "bfloat16": 5e-3},
            "rtol": {"float64": 1e-5, "float32": 1e-5, "float16": 5e-3, "bfloat16": 5e-3}}


class HarnessClient:
    """One harness server; request() may be called from many threads at once."""

    def __init__(self, python, device, mode, max_children):
        env = dict(os.environ, PYTHONPATH=HARNESS_DIR, PYTHONUNBUFFERED="1")
        self.process = subprocess.Popen(
            [python, "-m", "kforge_harness", "serve", "--device", device, "--mode", mode,
             "--max-children", str(max_children)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True, bufsize=1)
        ready = json.loads(self.process.stdout.readline() or '{"ready": false, "error": "no ready line"}')
        if not ready.get("ready"):
            raise SystemExit(f"harness server not ready: {ready.get('error')}")
        self.ready = ready
        self.pending = {}
        self.lock = threading.Lock()
        self.next_id = 0
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.process.stdout:
            try:
                body = json.loads(line)
            except ValueError:
                continue
            if "status" not in body:  # a need line before the answer (PROTOCOL.md)
                continue
            with self.lock:
                future = self.pending.pop(str(body.get("id")), None)
            if future is not None:
                future.set_result(body)
        with self.lock:  # the server died: nobody gets an answer any more
            for future in self.pending.values():
                future.set_result({"status": "error", "error_class": "harness_error",
                                   "message": "the harness server died"})
            self.pending.clear()

    def request(self, body, wait_s):
        future = Future()
        with self.lock:
            self.next_id += 1
            body = dict(body, id=str(self.next_id))
            self.pending[body["id"]] = future
            self.process.stdin.write(json.dumps(body) + "\n")
            self.process.stdin.flush()
        return future.result(timeout=wait_s)

    def close(self):
        self.process.stdin.close()
        self.process.wait(timeout=30)


def load_tasks(profile):
    import yaml  # the harness needs PyYAML too (its rule files)
    with open(os.path.join(SUITE, "manifest.yaml"), encoding="utf-8") as handle:
        manifest = yaml.safe_load(handle)
    tasks = {}
    for entry in manifest["tasks"]:
        path = os.path.join(SUITE, entry["file"])
        task_id = entry.get("id") or os.path.splitext(os.path.basename(path))[0]
        tasks[task_id] = {"path": path, "format": entry.get("format", "kernelbench-torch"),
                          "sizes": (entry.get("sizes") or {}).get(profile, {}), "size_scale": 1.0}
    return tasks


class Checker:
    def __init__(self, client, tasks, args):
        self.client = client
        self.tasks = tasks
        self.args = args
        self.limits = {"timeout_s": args.timeout, "memory_mb": args.memory_mb, "cpu_s": args.timeout * 4}

    def call(self, action, task, code, language, options=None):
        body = {"action": action, "task": task, "limits": self.limits,
                "candidate": {"language": language} if code is None else {"code": code, "language": language}}
        if options:
            body["options"] = options
        return self.client.request(body, self.args.timeout + 120)

    def ladder(self, task_id, code, language, timing, rule=None, stages=("check", "compile", "run")):
        """check -> compile -> run, stopping at the first verdict that is not pass."""
        task = self.tasks[task_id]
        started = time.monotonic()
        response = None
        for stage in stages:
            options = {"timing": {"enabled": timing, "trials": self.args.timing_trials}} if stage == "run" else None
            if options is not None and rule is not None:
                options["rule"] = rule
            response = self.call(stage, task, code, language, options)
            if response["status"] != "pass":
                break
        return stage, response, time.monotonic() - started


def row(section, name, stage, response, expected, seconds):
    metrics = response.get("metrics") or {}
    got = "pass" if response["status"] == "pass" else response.get("error_class") or response["status"]
    # As each finishes, on stderr: a run cut by a time limit still shows what it got.
    print(f"done: {section} {name} {stage}: {got} (expected {expected}), {seconds:.1f} s",
          file=sys.stderr, flush=True)
    return {"section": section, "candidate": name, "stage": stage, "got": got, "expected": expected,
            "ok": got == expected, "max_abs_diff": metrics.get("max_abs_diff"),
            # How far from the default rule's whole-output bounds (max_rel_l2 5e-4,
            # max_centered_rel_error 0.25 for float32): what honest kernels reach.
            "rel_l2": metrics.get("rel_l2_error"), "centered": metrics.get("centered_rel_error"),
            "speedup": metrics.get("speedup"), "seconds": seconds,
            "message": (response.get("message") or "").splitlines()[0][:600] if response.get("message") else ""}


def kbx_section(checker, pool):
    tasks = {}
    for category in sorted(os.listdir(KBX_TASKS)):
        for name in sorted(os.listdir(os.path.join(KBX_TASKS, category))):
            if name.endswith(".py"):
                tasks[name[:-3]] = {"path": os.path.join(KBX_TASKS, category, name), "format": "kernelbenchx"}
    checker.tasks.update(tasks)

    def reference(task_id):
        started = time.monotonic()
        response = checker.call("run", tasks[task_id], None, "python",
                                {"timing": {"enabled": False}, "rule": KBX_RULE})
        return row("kbx", f"{task_id} (reference)", "run", response, "pass", time.monotonic() - started)

    def candidate(file_name):
        with open(os.path.join(KBX_TRITON, file_name), encoding="utf-8") as handle:
            code = handle.read()
        stage, response, seconds = checker.ladder(file_name[:-3], code, "triton", timing=True, rule=KBX_RULE)
        return row("kbx", f"kbx-triton/{file_name[:-3]}", stage, response, "pass", seconds)

    rows = list(pool.map(reference, sorted(tasks)))
    return rows + list(pool.map(candidate, sorted(f for f in os.listdir(KBX_TRITON) if f.endswith(".py"))))


def run_section(checker, pool, section):
    if section == "kbx":
        return kbx_section(checker, pool)
    if section == "reference":
        def one(task_id):
            started = time.monotonic()
            response = checker.call("run", checker.tasks[task_id], None, "python",
                                    {"timing": {"enabled": False}})
            # A task that cannot judge anyone says so on its first line (027: task_error).
            with open(checker.tasks[task_id]["path"], encoding="utf-8") as handle:
                match = EXPECT.match(handle.readline())
            expected = match.group(1) if match else "pass"
            return row(section, task_id, "run", response, expected, time.monotonic() - started)
        return list(pool.map(one, sorted(checker.tasks)))

    if section == "timing":
        return run_timing_section(checker, pool)

    language = {"triton": "triton", "broken_triton": "triton", "cuda": "cuda", "broken_cuda": "cuda",
                "cpp": "cpp", "broken": "cpp"}[section]
    directory = os.path.join(SUITE, "candidates", section)
    files = sorted(f for f in os.listdir(directory) if f.endswith(".py"))

    def one(file_name):
        with open(os.path.join(directory, file_name), encoding="utf-8") as handle:
            code = handle.read()
        match = EXPECT.search(code)
        expected = match.group(1) if match else "pass"
        base = file_name.split("__", 1)[-1]
        task_id = base[:-3].split(".")[0]
        stage, response, seconds = checker.ladder(task_id, code, language, timing=expected == "pass")
        return row(section, file_name[:-3], stage, response, expected, seconds)

    rows = list(pool.map(one, files))
    if section.startswith("broken"):
        # Whatever those did to their children, a good candidate right after must pass.
        good_dir = {"triton": "triton", "cuda": "cuda"}.get(language, "cpp")
        with open(os.path.join(SUITE, "candidates", good_dir, "001_relu.py"), encoding="utf-8") as handle:
            stage, response, seconds = checker.ladder("001_relu", handle.read(), language, timing=False)
        rows.append(row(section, f"{good_dir}/001_relu after the broken ones", stage, response, "pass", seconds))
    return rows


def run_timing_section(checker, pool):
    if checker.args.device == "cpu":
        print("timing section skipped: it needs a CUDA device (its candidates are Triton and CUDA)")
        return []
    directory = os.path.join(HARNESS_DIR, "tests", "data", "candidates", "timing_gpu")

    def one(file_name):
        with open(os.path.join(directory, file_name), encoding="utf-8") as handle:
            code = handle.read()
        match = EXPECT.search(code)
        expected = match.group(1) if match else "pass"
        kind, task_id = file_name[:-3].split("__", 1)
        language = "triton" if kind.endswith("_triton") else "cuda"
        stage, response, seconds = checker.ladder(task_id, code, language, timing=True,
                                                  stages=("compile", "run"))
        return row("timing", file_name[:-3], stage, response, expected, seconds)

    return list(pool.map(one, sorted(f for f in os.listdir(directory) if f.endswith(".py"))))


def fmt(value):
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


def print_table(rows):
    if not rows:
        return
    columns = ["section", "candidate", "stage", "got", "expected", "max_abs_diff", "rel_l2", "centered",
               "speedup", "seconds"]
    cells = [[fmt(r[c]) for c in columns] + ["" if r["ok"] else "MISMATCH " + r["message"]] for r in rows]
    header = columns + ["note"]
    widths = [max(len(header[i]), *(len(c[i]) for c in cells)) for i in range(len(header) - 1)]
    print("  ".join(h.ljust(w) for h, w in zip(header, widths)) + "  note")
    for c in cells:
        print("  ".join(v.ljust(w) for v, w in zip(c, widths)) + "  " + c[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--profile", default="full", choices=("small", "full"))
    parser.add_argument("--sections", default="reference,triton,broken_triton")
    parser.add_argument("--mode", default="fork", choices=("fork", "spawn"))
    parser.add_argument("--max-children", type=int, default=4)
    parser.add_argument("--timeout", type=float, default=300, help="seconds per child")
    parser.add_argument("--memory-mb", type=int, default=65536)
    parser.add_argument("--timing-trials", type=int, default=20)
    args = parser.parse_args()

    client = HarnessClient(sys.executable, args.device, args.mode, args.max_children)
    print(f"harness ready: python {client.ready['python']}, torch {client.ready['torch']}, "
          f"triton {client.ready['triton']}, device {client.ready['device']}, mode {client.ready['mode']}")
    checker = Checker(client, load_tasks(args.profile), args)
    rows = []
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=args.max_children) as pool:
        for section in args.sections.split(","):
            rows += run_section(checker, pool, section.strip())
    client.close()
    print_table(rows)
    bad = [r for r in rows if not r["ok"]]
    print(f"{len(rows) - len(bad)} of {len(rows)} as expected in {time.monotonic() - started:.1f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
