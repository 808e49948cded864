#!/usr/bin/env python3
"""What the judge's comparison costs per MB of output on the CPU, and what the
whole-output statistics (issue 12: rel_l2_error, share_over_coarse, max/mean relative
error) add. This harness's compare.py and a baseline harness's (e.g. main's before the
statistics, loaded under another package name) compare the same float32 outputs held in
memory (no file reading: the arithmetic alone), in one process, alternately, so that a
loaded machine slows both alike. CPU time is reported beside wall time: on a loaded
machine it is the steadier of the two.

    /usr/bin/python3 bench/compare_cost.py --baseline-harness OTHER_CHECKOUT/plugins/eval/harness
    /usr/bin/python3 bench/compare_cost.py --mb 64 256 --repeats 7
"""

import argparse
import importlib
import os
import statistics
import sys
import time

import torch

HARNESS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                           "plugins", "eval", "harness")


def load(harness):
    """The judge.compare and protocol modules of `harness`'s kforge_harness. Its modules
    import each other by absolute name, so each harness is imported in turn under the
    package's own name; the modules of one keep their references to each other when the
    next replaces them in sys.modules."""
    for module in [m for m in sys.modules if m == "kforge_harness" or m.startswith("kforge_harness.")]:
        del sys.modules[module]
    sys.path.insert(0, harness)
    try:
        return (importlib.import_module("kforge_harness.judge.compare"),
                importlib.import_module("kforge_harness.protocol"))
    finally:
        sys.path.remove(harness)


def timed(call):
    wall, cpu = time.perf_counter(), time.process_time()
    call()
    return time.perf_counter() - wall, time.process_time() - cpu


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline-harness", help="a harness directory to compare with")
    parser.add_argument("--mb", type=float, nargs="+", default=[64.0, 256.0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (a judge has cores/max_children)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    sides = [("this harness", load(HARNESS_DIR))]
    if args.baseline_harness:
        sides.append(("baseline", load(args.baseline_harness)))
    print(f"comparison of a float32 output with a noisy copy, in memory, {args.threads} thread(s), "
          f"median of {args.repeats}, the sides alternating")
    for mb in args.mb:
        torch.manual_seed(0)
        ref = torch.randn(int(mb * (1 << 20)) // 4)
        cand = ref + torch.randn(ref.numel()) * 1e-7
        samples = {name: [] for name, _ in sides}
        for name, (compare, protocol) in sides:  # the kernels' first load, untimed
            compare.compare_tensors(ref[:1 << 20], cand[:1 << 20], protocol.DEFAULT_RULE)
        for _ in range(args.repeats):
            for name, (compare, protocol) in sides:
                samples[name].append(timed(lambda: compare.compare_tensors(ref, cand, protocol.DEFAULT_RULE)))
        line = f"{mb:6.0f} MB:"
        cpu = {}
        for name, values in samples.items():
            wall = statistics.median(v[0] for v in values) * 1000 / mb
            cpu[name] = statistics.median(v[1] for v in values) * 1000 / mb
            line += f"  {name}: wall {wall:6.2f} ms/MB, CPU {cpu[name]:6.2f} ms/MB"
        if len(cpu) == 2:
            line += f"  (extra CPU {cpu['this harness'] - cpu['baseline']:+.2f} ms/MB)"
        print(line, flush=True)


if __name__ == "__main__":
    main()
