"""Runs Python source through the C API (ctypes.pythonapi.PyRun_SimpleString), out of the sight of exec."""
import ctypes

import torch

ctypes.pythonapi.PyRun_SimpleString(b"import builtins; builtins._kforge_ran = True")


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
