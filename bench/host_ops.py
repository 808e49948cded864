"""What the task host's work between two timed calls costs on the device, step by step
(issue 20): for each KernelBench task given, the operations the host does per call, each
timed alone with the device synchronised around it (median of --repeat):

  every call:  get_inputs() on the device, the copy into the lent input buffer, the
               output buffer's poison, the check that no poison is left, the output's
               sampled fingerprint
  checked call (a spot check): the inputs made again and compared with the lent ones,
               the reference's forward and its NaN count, the comparison with the
               candidate's output (compare_leaf on a snapshot of the buffer); and the
               inputs' digests, which every trial takes twice

    PYTHONPATH=plugins/eval/harness /opt/torch/.venv/bin/python3 bench/host_ops.py \\
        --device cuda:0 KernelBench/level1/5_Matrix_scalar_multiplication.py"""

import argparse
import importlib.util
import os
import statistics
import time

import torch

from kforge_harness.anticheat import buffers
from kforge_harness.judge import compare
from kforge_harness.judge.outputs import SnapshotLeaf, TensorLeaf, digest
from kforge_harness.protocol import normalise_request
from kforge_harness.tasks.runner import nan_count, seed_everything

RULE = normalise_request({"id": 1, "action": "check", "candidate": {"code": ""}})["options"]["rule"]


def timed(device, repeat, step):
    samples = []
    for _ in range(repeat):
        torch.cuda.synchronize(device)
        started = time.perf_counter()
        step()
        torch.cuda.synchronize(device)
        samples.append((time.perf_counter() - started) * 1e3)
    return statistics.median(samples)


def task_module(path):
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tasks", nargs="+")
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    device = torch.device(args.device)
    for path in args.tasks:
        module = task_module(path)
        with torch.device(device):
            model = module.Model(*module.get_init_inputs())

        def make_inputs():
            seed_everything(1)
            with torch.device(device):
                return [x for x in module.get_inputs()]

        inputs = make_inputs()
        with torch.no_grad():
            out = model(*inputs)
        lent_inputs = [torch.empty_like(x) for x in inputs if isinstance(x, torch.Tensor)]
        lent_output = torch.empty_like(out)
        lent_output.copy_(out)
        sampler = buffers.Sampler()
        steps = {
            "get_inputs": make_inputs,
            "copy into lent inputs": lambda: [b.copy_(x) for b, x in zip(lent_inputs, inputs)],
            "poison output": lambda: lent_output.fill_(float("nan")),
            "unwritten check": lambda: buffers.unwritten([lent_output]),
            "fingerprint": lambda: sampler.fingerprint([lent_output]),
        }
        every = {}
        for name, step in steps.items():
            lent_output.copy_(out)  # the checks read the output as the candidate left it
            every[name] = timed(device, args.repeat, step)
        lent_output.copy_(out)

        def forward():
            with torch.no_grad():
                return model(*inputs)

        checked = {
            "inputs again + compare": lambda: buffers.differing(lent_inputs, make_inputs(), set()),
            "reference forward": forward,
            "nan count": lambda: nan_count([out]),
            "compare_leaf": lambda: compare.compare_leaf(TensorLeaf(out), SnapshotLeaf(lent_output), RULE),
            # Not a timed call's: a trial digests every input when filled and when judged.
            "input digests (trials)": lambda: [digest(x) for x in lent_inputs],
        }
        # The fused comparison's chunk size against the torch path's (fused.CHUNK_ELEMENTS).
        chosen = compare.fused.CHUNK_ELEMENTS
        compare.fused.CHUNK_ELEMENTS = compare.DEVICE_CHUNK_ELEMENTS
        small = timed(device, args.repeat, checked["compare_leaf"])
        compare.fused.CHUNK_ELEMENTS = chosen
        check = {name: timed(device, args.repeat, step) for name, step in checked.items()}
        # The fused kernel alone on one chunk.
        kernel_ms = None
        if compare.fused.usable(device, out.dtype):
            ref = out.reshape(-1)[:compare.fused.CHUNK_ELEMENTS]
            cand = lent_output.reshape(-1)[:ref.numel()]
            tolerances = compare.fused.tolerances(device, 1e-4, 1e-4, 1e-4, 1e-5, 1e-2)
            kernel_ms = timed(device, args.repeat, lambda: compare.fused.measure(ref, cand, tolerances))
        size = sum(x.numel() * x.element_size() for x in lent_inputs) / 2**30
        print(f"{os.path.basename(path)}: inputs {size:.2f} GiB, output "
              f"{out.numel() * out.element_size() / 2**30:.2f} GiB; fused comparison: "
              f"{compare.fused._failed or 'in use'}")
        print("  every call:    " + ", ".join(f"{k} {v:.2f} ms" for k, v in every.items())
              + f"; total {sum(every.values()):.2f} ms")
        print("  checked call:  " + ", ".join(f"{k} {v:.2f} ms" for k, v in check.items())
              + f"; total {sum(check.values()):.2f} ms (compare_leaf in chunks of "
              f"{compare.DEVICE_CHUNK_ELEMENTS >> 20}M elements: {small:.2f} ms)")
        if kernel_ms is not None:
            print(f"  the fused kernel on one chunk of {ref.numel() >> 20}M elements: {kernel_ms:.2f} ms")
        del model, inputs, out, lent_inputs, lent_output
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
