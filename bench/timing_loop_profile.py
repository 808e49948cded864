"""Where a timing loop's time goes (issue 20): times each task's reference as its own
candidate through a real server (fork mode, 5 trials, 3 warm-up and N timed calls) with
cProfile around every command the task host answers, then prints per task the loop's
numbers (timing_seconds over timing_calls against timing_wall_ms, the call's bracket) and
the task host's most expensive functions. The host's work between calls (the spot checks,
the next call's inputs) is what the bracket does not show.

    PYTHONPATH=plugins/eval/harness /opt/torch/.venv/bin/python3 bench/timing_loop_profile.py \\
        --device cuda:0 --trials 30 --out /tmp/prof KernelBench/level1/5_Matrix_scalar_multiplication.py
    PYTHONPATH=plugins/eval/harness /usr/bin/python3 bench/timing_loop_profile.py \\
        --device cpu plugins/eval/harness/tests/data/tasks/relu.py

`--serve` is this script as the server (the client below starts it so): the harness's own
`serve` with the task host's commands profiled; one profile per host, host-PID.prof in
--out."""

import argparse
import cProfile
import glob
import os
import pstats
import runpy
import sys
import time

HARNESS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                           "plugins", "eval", "harness")


def serve(out, argv):
    """Runs `kforge_harness serve ARGV` with cProfile in every task host (Python 3.12
    allows one profiler per process: the commands a command runs are not profiled apart)."""
    from kforge_harness.reference import host
    state = {"profile": None, "inside": False, "commands": 0}

    def profiled(name):
        real = getattr(host.Host, name)

        def command(self, *args, **kwargs):
            if state["inside"]:
                return real(self, *args, **kwargs)
            state["inside"] = True
            state["profile"] = state["profile"] or cProfile.Profile()
            state["profile"].enable()
            try:
                return real(self, *args, **kwargs)
            finally:
                state["profile"].disable()
                state["inside"] = False
                state["commands"] += 1
                # The server ends its hosts with a signal: the profile is written as it goes.
                if state["commands"] % 10 == 0 or name in ("open", "close", "plan"):
                    state["profile"].dump_stats(os.path.join(out, f"host-{os.getpid()}.prof"))
        setattr(host.Host, name, command)

    for name in ("start", "open", "close", "fill", "judge", "after", "step", "plan"):
        profiled(name)
    sys.argv = ["kforge_harness", *argv]
    runpy.run_module("kforge_harness", run_name="__main__")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tasks", nargs="*", help="KernelBench-format task files")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--trials", type=int, default=100, help="timed calls per loop")
    parser.add_argument("--out", default="/tmp/kforge-timing-profile")
    parser.add_argument("--top", type=int, default=25, help="functions printed per host")
    parser.add_argument("--serve", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if args.serve is not None:
        serve(args.out, args.serve)
        return
    sys.path.insert(0, HARNESS_DIR)
    from tests import client
    for old in glob.glob(os.path.join(args.out, "host-*.prof")):
        os.remove(old)
    # client.Server runs PYTHON -m kforge_harness serve ...: this script stands in.
    wrapper = os.path.join(args.out, "python")
    with open(wrapper, "w", encoding="utf-8") as handle:
        handle.write(f"#!/bin/sh\nshift 2\nexec {sys.executable} {os.path.abspath(__file__)} "
                     f"--out {args.out} --serve \"$@\"\n")
    os.chmod(wrapper, 0o755)
    server = client.Server(mode="fork", device=args.device, max_children=2, python=wrapper)
    try:
        for path in args.tasks:
            request = {"id": os.path.basename(path), "action": "run", "task": {"path": os.path.abspath(path)},
                       "candidate": {"code": None, "language": "python"},
                       "options": {"trials": 5, "timing": {"enabled": True, "warmup": 3,
                                                           "trials": args.trials}},
                       "limits": {"timeout_s": 900, "memory_mb": 65536}}
            started = time.monotonic()
            response = server.ask(request, timeout=1800)[request["id"]]
            metrics = response.get("metrics") or {}
            calls = metrics.get("timing_calls") or 0
            print(f"{request['id']}: {time.monotonic() - started:.1f} s, {response.get('status')} "
                  f"{response.get('error_class') or ''} {str(response.get('message') or '')[:200]}")
            if calls:
                # timing_seconds runs from the end of the trials: the reference's own loop
                # (each task here is new to the server, so this job pays for it) and then
                # the candidate's, of timing_calls calls each.
                print(f"  {metrics['timing_seconds'] / (2 * calls) * 1e3:.1f} ms per timed call (both loops), "
                      f"{metrics['timing_wall_ms']:.2f} ms of it in the call's bracket, "
                      f"reference {metrics['reference_ms']:.3f} ms, speedup {metrics['speedup']:.3f}, "
                      f"{metrics['timing_spot_checks']:.0f} spot checks in {calls:.0f} calls")
    finally:
        server.close()
    time.sleep(1)
    for profile in sorted(glob.glob(os.path.join(args.out, "host-*.prof"))):
        print(f"===== task host {profile}")
        pstats.Stats(profile).sort_stats("cumulative").print_stats(args.top)


if __name__ == "__main__":
    main()
