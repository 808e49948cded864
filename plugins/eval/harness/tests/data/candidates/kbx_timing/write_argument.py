"""Timed (its arguments are views of the lent slot), it writes its result into its first
argument and returns that argument: the same work, its output aliasing an input, and an
input the reference leaves unchanged changed in place. A checked unit compares every
argument the reference leaves unchanged with what the task host handed over.
Expected: cheat_detected."""
import torch


def matmul_chain(a, b):
    result = torch.relu(torch.mm(a, b))
    if a._base is None:
        return result
    a.copy_(result)
    return a
