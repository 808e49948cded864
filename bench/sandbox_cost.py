#!/usr/bin/env python3
"""What the candidate sandbox (plugins/eval/harness/kforge_harness/sandbox.py) adds to a
forked child, the way the fork server makes one: this process imports torch (and triton
when present) and calls sandbox.prepare(), as the server does at start; then, N times,
it forks a child that runs a trivial candidate step and exits, once plainly and once
through sandbox.enter(). Two numbers per child, both from fork() in this process:

  ready  until the child can run candidate code (plain: the fork; sandboxed: the fork,
         the namespaces, the new root, the credentials, seccomp)
  total  until the child has finished and been reaped (the supervisor's exit, the
         namespace's teardown included; on a GPU, CUDA's initialisation, which sees
         every GPU in a plain child and only the given one in a sandboxed one)
  cpu    CPU time (user + system) of the child's whole process tree: what the sandbox
         costs a loaded machine, where wall times mostly measure the load

    /usr/bin/python3 bench/sandbox_cost.py                      # CPU
    python3 bench/sandbox_cost.py --device cuda:0               # on a GPU: CUDA init and
                                                                # one kernel in each child
Prints medians and p90s per mode and the differences of the medians.
"""

import argparse
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time

HARNESS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                           "plugins", "eval", "harness")
sys.path.insert(0, HARNESS_DIR)


def child_step(device):
    """The candidate's side: nothing on the CPU (the cost measured is the sandbox's); on a
    GPU, CUDA initialisation and one kernel, which the sandbox must not slow down."""
    if device.startswith("cuda"):
        import torch
        torch.ones(1, device=device).add_(1)
        torch.cuda.synchronize()


def one_child(scratch, device, sandboxed):
    from kforge_harness import sandbox
    workdir = tempfile.mkdtemp(dir=scratch)
    read_fd, write_fd = os.pipe()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        os.setsid()
        inside = device
        if sandboxed:
            inside = sandbox.enter(workdir, device).device
        ready = time.perf_counter()
        child_step(inside)
        os.write(write_fd, repr(ready).encode())
        os._exit(0)
    os.close(write_fd)
    ready = float(os.read(read_fd, 64).decode())
    os.close(read_fd)
    _, status = os.waitpid(pid, 0)
    total = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    shutil.rmtree(workdir, ignore_errors=True)
    if status != 0:
        raise RuntimeError(f"a child failed (status {status})")
    return ready - started, total, cpu


def summary(values):
    ordered = sorted(values)
    return statistics.median(ordered) * 1000, ordered[int(0.9 * (len(ordered) - 1))] * 1000


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("-n", type=int, default=30, help="children per mode")
    args = parser.parse_args()
    import torch  # noqa: F401 - the server's imports, which every fork copies
    try:
        import triton  # noqa: F401
    except ImportError:
        pass
    from kforge_harness import sandbox
    sandbox.prepare()
    scratch = tempfile.mkdtemp(prefix="kforge-sandbox-bench-")
    try:
        results = {}
        for round_ in range(args.n + 2):  # interleaved, so both see the same machine load
            for sandboxed in (False, True):
                timing = one_child(scratch, args.device, sandboxed)
                if round_ >= 2:  # the first rounds warm the page cache
                    results.setdefault(sandboxed, []).append(timing)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"device {args.device}, {args.n} children per mode, python {sys.version.split()[0]}, "
          f"torch {torch.__version__}, {os.cpu_count()} CPUs")
    medians = {}
    for sandboxed, label in ((False, "plain fork"), (True, "fork + sandbox")):
        ready, total, cpu = (summary([timing[i] for timing in results[sandboxed]]) for i in range(3))
        medians[sandboxed] = (ready[0], total[0], cpu[0])
        print(f"{label:15s} ready {ready[0]:7.1f} ms (p90 {ready[1]:7.1f})   "
              f"total {total[0]:7.1f} ms (p90 {total[1]:7.1f})   cpu {cpu[0]:7.1f} ms (p90 {cpu[1]:7.1f})")
    added = [medians[True][i] - medians[False][i] for i in range(3)]
    print(f"{'added (medians)':15s} ready {added[0]:7.1f} ms{'':13s}total {added[1]:7.1f} ms"
          f"{'':13s}cpu {added[2]:7.1f} ms")


if __name__ == "__main__":
    main()
