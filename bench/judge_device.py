#!/usr/bin/env python3
"""What a judge's comparison of one large output costs on the CPU and on a device judge
(compare.compare_leaves with device=...): a float32 output of G GB and a noisy copy are
written in the format outputs.FileLeaf reads (raw bytes named by outputs.leaf_file,
in pieces, so the bench never holds a whole output), then each way compares
them in a fresh process, as a judge does. For the device, the memory the process holds on
the device (its CUDA context included, as nvidia-smi sees it) is what a device judge
costs admission (server.JUDGE_DEVICE_MB). Needs a CUDA device for the device rows.

    python3 bench/judge_device.py --gb 6.4 --device cuda:0
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HARNESS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                           "plugins", "eval", "harness")
sys.path.insert(0, HARNESS_DIR)

import torch  # noqa: E402

from kforge_harness.judge import compare, outputs
from kforge_harness import devices, protocol  # noqa: E402


def write_pair(directory, gb):
    """Writes the reference and the candidate (the reference plus noise within the
    default rule) in 256 MB pieces; returns their leaf description."""
    numel = int(gb * 1e9) // 4
    piece = 64 << 20
    info = None
    for prefix, noise in (("r", 0.0), ("c", 1e-6)):
        torch.manual_seed(0)
        path = os.path.join(directory, outputs.leaf_file(prefix, 0))
        with open(path, "wb") as handle:
            for start in range(0, numel, piece):
                values = torch.randn(min(piece, numel - start))
                if noise:
                    values += noise
                handle.write(values.numpy().tobytes())
        info = {"kind": "tensor", "dtype": "float32", "shape": [numel], "nbytes": numel * 4}
    return info


def compare_once(directory, info, workers, device):
    """One comparison in this process; prints its wall time and, on a device, the
    device memory this process holds."""
    torch.set_num_threads(1)
    accelerator = devices.Device(device).activate(torch) if device != "cpu" else None
    ref = [outputs.FileLeaf(directory, "r", 0, info)]
    cand = [outputs.FileLeaf(directory, "c", 0, info)]
    start = time.perf_counter()
    outcome = compare.compare_leaves(ref, cand, protocol.DEFAULT_RULE, workers=workers, device=accelerator)
    seconds = time.perf_counter() - start
    held = ""
    if accelerator is not None:
        query = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory",
                                "--format=csv,noheader,nounits"], capture_output=True, text=True)
        for line in query.stdout.splitlines():
            pid, used = (field.strip() for field in line.split(","))
            if pid == str(os.getpid()):
                held = f", {used} MiB held on the device"
    verdict = "pass" if outcome.passed else outcome.error_class
    print(f"{device:8s} {workers} worker(s): {seconds:6.2f} s ({info['nbytes'] / 1e9 / seconds:.2f} GB/s "
          f"of output), {verdict}{held}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gb", type=float, default=1.0)
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--one", nargs=2, help=argparse.SUPPRESS)  # DEVICE WORKERS, in a child
    parser.add_argument("--dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        with open(os.path.join(args.dir, "info.json"), encoding="utf-8") as handle:
            compare_once(args.dir, json.load(handle), int(args.one[1]), args.one[0])
        return
    with tempfile.TemporaryDirectory(prefix="kforge-bench-judge-") as directory:
        start = time.perf_counter()
        info = write_pair(directory, args.gb)
        with open(os.path.join(directory, "info.json"), "w", encoding="utf-8") as handle:
            json.dump(info, handle)
        print(f"two {info['nbytes'] / 1e9:.2f} GB output files written in "
              f"{time.perf_counter() - start:.1f} s; each row a fresh process", flush=True)
        ways = [("cpu", w) for w in args.workers]
        if args.device != "cpu":
            ways += [(args.device, w) for w in args.workers]
        for device, workers in ways:
            subprocess.run([sys.executable, __file__, "--one", device, str(workers), "--dir", directory],
                           check=False)


if __name__ == "__main__":
    main()
