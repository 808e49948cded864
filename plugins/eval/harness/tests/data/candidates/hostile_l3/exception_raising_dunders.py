# Hostile: raises an exception whose __str__, __repr__, __eq__, __hash__ and __bool__ all
# raise in turn, and whose __del__ ends the process with status 0 before anything else is
# said: any of them run on the trusted side would break the judge or shift the blame.
import os

import torch


class Poison(Exception):
    def __str__(self):
        raise Poison("__str__")

    def __repr__(self):
        raise Poison("__repr__")

    def __eq__(self, other):
        raise Poison("__eq__")

    def __hash__(self):
        raise Poison("__hash__")

    def __bool__(self):
        raise Poison("__bool__")

    def __del__(self):
        os._exit(0)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        raise Poison()
