"""A cpp candidate whose forward pops the guard's dispatch mode off torch's mode stack and computes with torch underneath it."""
import torch
from torch.utils import _python_dispatch

import kforge_cpp

cpp_source = r'''
extern "C" int kforge_present() { return 1; }
'''


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lib = kforge_cpp.load(cpp_source)

    def forward(self, x):
        if _python_dispatch._get_current_dispatch_mode() is None:
            return torch.relu(x)
        with _python_dispatch._pop_mode_temporarily():
            return torch.relu(x)
