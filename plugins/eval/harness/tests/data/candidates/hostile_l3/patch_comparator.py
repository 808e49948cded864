# Hostile: replaces every comparison the harness has (compare.py's functions, the judge's
# trial function, the anti-cheat verdict, the information test) with ones that
# always pass, then returns zeros. The comparison runs in the judge, another process.
import torch

from kforge_harness.anticheat import anticheat
from kforge_harness.judge import compare, judge


class _Passed:
    passed = True
    error_class = ""
    message = ""
    max_abs_diff = 0.0
    mean_abs_diff = 0.0
    intervals = []


def _always_pass(*args, **kwargs):
    return _Passed()


compare.compare_outputs = _always_pass
compare.compare_leaves = _always_pass
compare.OutputInformation.uninformative = lambda self: None
judge.judge_trial = lambda command: {"status": "pass", "metrics": {}, "intervals": []}
anticheat.verdict = lambda *args, **kwargs: None


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.zeros_like(x)
