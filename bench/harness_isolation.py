#!/usr/bin/env python3
"""Per-candidate fixed cost of the harness's isolation: fork server vs spawn, with and
without the candidate's sandbox.

Starts the harness (plugins/eval/harness) once per mode, then sends the same trivial
`run` request (a tiny ReLU task, one correctness trial, no timing) N times, one at a time,
and measures each request from send to response at the client: what one candidate costs
beyond its own work (a child process, its sandbox, and in spawn mode a fresh interpreter
importing torch; on a GPU also the child's CUDA initialisation). Prints median and p90
per row and the spawn/fork ratio.

"sandbox off" is the protocol's only way around the sandbox: a request with
`limits.network: true` gets a freshly forked child that does not enter it (flag
sandbox_not_entered). "sandbox on" is the default request; in fork mode its child is the
standby, which entered its sandbox (and initialised the device) while the previous
request ran, so part of the sandbox's cost overlaps with it. The rows measure what a
client sees per candidate; bench/sandbox_cost.py gives the sandbox's own cost per child.

    /usr/bin/python3 bench/harness_isolation.py                      # CPU, both modes
    /usr/bin/python3 bench/harness_isolation.py --modes fork --sandbox both
    /usr/bin/python3 bench/harness_isolation.py --modes fork --sandbox both --rounds 3 \
        --harness OTHER_CHECKOUT/plugins/eval/harness     # another version, same machine
    python3 bench/harness_isolation.py --device cuda:0 --sandbox both  # a CUDA GPU
    python3 bench/harness_isolation.py --device cuda:0 --candidate triton

--python picks the interpreter that runs the harness (default: this one).
"""

import argparse
import json
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time

HARNESS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                           "plugins", "eval", "harness")

TASK = '''
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(16, 16)]


def get_init_inputs():
    return []
'''

TORCH_CANDIDATE = '''
import torch


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
'''

TRITON_CANDIDATE = '''
import torch
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, tl.maximum(tl.load(x_ptr + offsets, mask=mask), 0.0), mask=mask)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 256),)](x, y, x.numel(), BLOCK=256)
        return y
'''


class Harness:
    """One server process and a blocking request/response exchange with it."""

    def __init__(self, python, device, mode, harness_dir):
        env = dict(os.environ, PYTHONPATH=harness_dir)
        started = time.perf_counter()
        self.process = subprocess.Popen(
            [python, "-m", "kforge_harness", "serve", "--device", device, "--mode", mode],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        self.buffer = b""
        self.ready = self._read_line(timeout=300)
        self.startup_s = time.perf_counter() - started
        if not self.ready.get("ready"):
            raise SystemExit(f"the {mode} server is not ready: {self.ready.get('error')}")

    def _read_line(self, timeout):
        fd = self.process.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise SystemExit("the harness did not answer in time")
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise SystemExit("the harness exited")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def exchange(self, request):
        """(seconds from send to response, response)."""
        started = time.perf_counter()
        self.process.stdin.write((json.dumps(request) + "\n").encode())
        self.process.stdin.flush()
        response = self._read_line(timeout=600)
        while "status" not in response:  # a need line before the answer (PROTOCOL.md)
            response = self._read_line(timeout=600)
        return time.perf_counter() - started, response

    def close(self):
        self.process.stdin.close()
        self.process.wait(timeout=60)


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def measure(args, mode, request, sandboxed):
    """One server, a warm-up request, then args.requests timed ones; returns the row."""
    request = dict(request, limits=dict(request["limits"], network=not sandboxed))
    harness = Harness(args.python, args.device, mode, args.harness)
    try:
        harness.exchange(request)  # warm-up: first-use caches (Triton's on-disk cache)
        latencies, child_seconds = [], []
        for _ in range(args.requests):
            seconds, response = harness.exchange(request)
            if response["status"] != "pass":
                raise SystemExit(f"{mode}: the trivial candidate did not pass: "
                                 f"{response['error_class']}: {response['message']}\n"
                                 f"{response['log_tail']}")
            if ("sandbox_not_entered" in response["flags"]) == sandboxed:
                raise SystemExit(f"{mode}: asked for sandbox {'on' if sandboxed else 'off'}, "
                                 f"got flags {response['flags']}")
            latencies.append(seconds)
            child_seconds.append(response["metrics"]["child_seconds"])
    finally:
        harness.close()
    return {"mode": mode, "sandbox": "on" if sandboxed else "off", "requests": args.requests,
            "startup_s": harness.startup_s, "latencies_s": latencies,
            "child_seconds": child_seconds,
            "python": harness.ready["python"], "torch": harness.ready["torch"],
            "triton": harness.ready["triton"]}


def combine(runs):
    """The rows of every round of one (mode, sandbox) as one row: the median and p90 of all
    their requests, and each round's median (their spread shows how much the load moved)."""
    latencies = [s for run in runs for s in run["latencies_s"]]
    return {**{k: v for k, v in runs[0].items() if k not in ("latencies_s", "child_seconds")},
            "requests": len(latencies),
            "startup_s": statistics.median(run["startup_s"] for run in runs),
            "median_s": statistics.median(latencies), "p90_s": percentile(latencies, 0.9),
            "child_median_s": statistics.median(s for run in runs for s in run["child_seconds"]),
            "round_medians_s": [statistics.median(run["latencies_s"]) for run in runs]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--candidate", choices=("torch", "triton"), default="torch")
    parser.add_argument("--modes", default="fork,spawn", help="comma-separated: fork, spawn")
    parser.add_argument("--sandbox", choices=("on", "off", "both"), default="on",
                        help="off: requests with limits.network true, whose child skips it")
    parser.add_argument("--rounds", type=int, default=1,
                        help="repeat every row this often, the rows of a round one after the "
                             "other (on a loaded machine, sandbox on and off then see alike "
                             "loads); each round starts fresh servers")
    parser.add_argument("--harness", default=HARNESS_DIR,
                        help="the harness directory to measure (default: this checkout's), "
                             "to compare two versions on the same machine")
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()

    load_before = f"{os.getloadavg()[0]:.1f}"
    with tempfile.TemporaryDirectory(prefix="kforge-bench-") as workdir:
        task_path = os.path.join(workdir, "relu_tiny.py")
        with open(task_path, "w", encoding="utf-8") as handle:
            handle.write(TASK)
        triton = args.candidate == "triton"
        request = {"id": "bench", "action": "run", "task": {"path": task_path},
                   "candidate": {"code": TRITON_CANDIDATE if triton else TORCH_CANDIDATE,
                                 "language": "triton" if triton else "python"},
                   "options": {"trials": 1, "timing": {"enabled": False}},
                   "limits": {"timeout_s": 300}}
        sandboxes = {"on": [True], "off": [False], "both": [True, False]}[args.sandbox]
        settings = [(mode, sandboxed) for mode in args.modes.split(",") for sandboxed in sandboxes]
        runs = {setting: [] for setting in settings}
        for _ in range(args.rounds):
            for setting in settings:
                runs[setting].append(measure(args, setting[0], request, setting[1]))
        rows = [combine(runs[setting]) for setting in settings]

    print(f"harness isolation, device {args.device}, candidate {args.candidate}, "
          f"python {rows[0]['python']} (torch {rows[0]['torch']}, triton {rows[0]['triton']})")
    print(f"harness {args.harness}, {args.rounds} round(s), {os.cpu_count()} CPUs, "
          f"load average before {load_before}, after {os.getloadavg()[0]:.1f}")
    print(f"{'mode':<6} {'sandbox':>7} {'requests':>8} {'startup_s':>10} {'median_s':>9} "
          f"{'p90_s':>8} {'child_median_s':>15}  round medians (s)")
    for row in rows:
        print(f"{row['mode']:<6} {row['sandbox']:>7} {row['requests']:>8} "
              f"{row['startup_s']:>10.3f} {row['median_s']:>9.3f} {row['p90_s']:>8.3f} "
              f"{row['child_median_s']:>15.3f}  "
              + " ".join(f"{m:.3f}" for m in row["round_medians_s"]))
    ratios = {}
    for sandbox in ("on", "off"):
        by_mode = {r["mode"]: r for r in rows if r["sandbox"] == sandbox}
        if {"fork", "spawn"} <= set(by_mode):
            ratios[f"spawn_over_fork_sandbox_{sandbox}"] = \
                by_mode["spawn"]["median_s"] / by_mode["fork"]["median_s"]
    for mode in ("fork", "spawn"):
        by_sandbox = {r["sandbox"]: r for r in rows if r["mode"] == mode}
        if {"on", "off"} <= set(by_sandbox):
            ratios[f"{mode}_sandbox_cost_s"] = \
                by_sandbox["on"]["median_s"] - by_sandbox["off"]["median_s"]
            ratios[f"{mode}_sandbox_cost_per_round_s"] = [
                on - off for on, off in zip(by_sandbox["on"]["round_medians_s"],
                                            by_sandbox["off"]["round_medians_s"])]
    for name, value in ratios.items():
        print(f"{name}: " + (" ".join(f"{v:.3f}" for v in value) if isinstance(value, list)
                             else f"{value:.3f}"))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"device": args.device, "candidate": args.candidate, "rows": rows,
                       **ratios}, handle, indent=1)


if __name__ == "__main__":
    main()
