import torch
import torch.nn as nn

import kforge_fit_test_missing_module  # a module no machine has


class Model(nn.Module):
    def forward(self, x):
        return kforge_fit_test_missing_module.apply(x)


batch_size = 16
dim = 128


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
