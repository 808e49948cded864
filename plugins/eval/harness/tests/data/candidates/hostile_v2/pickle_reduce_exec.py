"""Unpickles a payload (its global's name split in the source) whose reduce step calls the builtin exec."""
import pickle

import torch

_PAYLOAD = (b"c__builtin__\n" + b"ex" + b"ec\np0\n(Vimport builtins; builtins._kforge_pickled = True\n"
            b"p1\ntp2\nRp3\n.")
pickle.loads(_PAYLOAD)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
