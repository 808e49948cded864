# Hostile: loosens every comparison rule it can reach (the default rule dict and every
# dict in its process that looks like a rule, the job's own included) to a tolerance
# of 10^9, then returns an answer that is off by 0.5 everywhere.
import gc

import torch

from kforge_harness import protocol

HUGE = {"atol": 1e9, "rtol": 1e9}

protocol.DEFAULT_RULE.update(HUGE)
for obj in gc.get_objects():
    if isinstance(obj, dict) and "atol" in obj and "rtol" in obj:
        obj.update(HUGE)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x) + 0.5
