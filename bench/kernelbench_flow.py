"""KernelBench's own evaluation flow on the same tasks, for the side-by-side numbers of
docs/performance.md (issue 20): per task, a fresh spawned process (as KernelBench's
eval_from_generations does on one GPU) runs KernelBench's eval_kernel_against_ref with
the task's reference as its own custom model (ModelNew = Model), its correctness trials
and its timed trials, and times the reference with KernelBench's measure_ref_program_time;
the speedup is reference / custom, as KernelBench reports it.

    python3 bench/kernelbench_flow.py --kernelbench KERNELBENCH_REPO \\
        [--trials 5] [--perf-trials 100] TASK.py ...

One JSON line per task ({"task", "correct", "custom_ms", "reference_ms", "speedup",
"seconds"}), then {"total_seconds"} for the whole flow, wall clock. KernelBench's code is
imported from KERNELBENCH_REPO/src (a checkout of ScalingIntelligence/KernelBench); it is
not part of kforge."""

import argparse
import copy
import json
import multiprocessing
import os
import re
import sys
import time


def _stub_missing(names):
    """KernelBench's package imports its LLM clients (dotenv, openai, litellm) at import
    time; the evaluation needs none of them: where one is missing, an empty module stands
    in for it."""
    import importlib.util
    import types
    for name in names:
        if importlib.util.find_spec(name) is None:
            module = types.ModuleType(name)
            module.load_dotenv = lambda *a, **k: None
            module.OpenAI = object
            module.completion = None
            module.tqdm = lambda iterable=None, **_: iterable
            module.BaseModel = _Record
            sys.modules[name] = module


class _Record:
    """Stands in for pydantic's BaseModel where pydantic is absent (the GPU host has no
    registry): fields from the class's annotated defaults, then the keyword arguments."""

    def __init__(self, **fields):
        for klass in reversed(type(self).__mro__):
            for name in getattr(klass, "__annotations__", {}):
                if hasattr(klass, name):
                    setattr(self, name, copy.deepcopy(getattr(klass, name)))
        for name, value in fields.items():
            setattr(self, name, value)

    def model_dump(self):
        return dict(vars(self))

    dict = model_dump


def _one(kernelbench, path, trials, perf_trials, queue):
    sys.path.insert(0, os.path.join(kernelbench, "src"))
    _stub_missing(("dotenv", "openai", "litellm", "tqdm", "pydantic"))
    import torch
    from kernelbench.eval import eval_kernel_against_ref
    from kernelbench.timing import measure_ref_program_time

    started = time.monotonic()
    with open(path, encoding="utf-8") as handle:
        source = handle.read()
    custom = re.sub(r"\bclass Model\b", "class ModelNew", source)
    custom = re.sub(r"super\(Model, self\)", "super(ModelNew, self)", custom)
    result = eval_kernel_against_ref(source, custom, num_correct_trials=trials,
                                     num_perf_trials=perf_trials, measure_performance=True,
                                     device=torch.device("cuda:0"), backend="cuda",
                                     check_for_excessive_speedup=False)
    reference = measure_ref_program_time(ref_arch_name=os.path.basename(path), ref_arch_src=source,
                                         num_trials=perf_trials, use_torch_compile=False,
                                         device=torch.device("cuda:0"))
    custom_ms = result.runtime if result is not None else None
    reference_ms = reference.get("mean") if isinstance(reference, dict) else None
    queue.put({"task": os.path.basename(path), "correct": bool(result and result.correctness),
               "custom_ms": custom_ms, "reference_ms": reference_ms,
               "speedup": reference_ms / custom_ms if custom_ms and reference_ms else None,
               "seconds": time.monotonic() - started})


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernelbench", required=True)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--perf-trials", type=int, default=100)
    parser.add_argument("tasks", nargs="+")
    args = parser.parse_args()
    context = multiprocessing.get_context("spawn")
    started = time.monotonic()
    for path in args.tasks:
        queue = context.Queue()
        process = context.Process(target=_one, args=(args.kernelbench, os.path.abspath(path),
                                                     args.trials, args.perf_trials, queue))
        process.start()
        process.join()
        line = queue.get() if not queue.empty() else {"task": os.path.basename(path),
                                                      "error": f"exit {process.exitcode}"}
        print(json.dumps(line), flush=True)
    print(json.dumps({"total_seconds": time.monotonic() - started}), flush=True)


if __name__ == "__main__":
    main()
