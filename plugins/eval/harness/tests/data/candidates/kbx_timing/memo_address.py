"""Memoizes by the arguments' addresses and shapes, once timed (its arguments are then
views of the slot the task host lends: `_base` set; in a trial the test code makes them).
The two slots alternate, so the same call of every other unit has the same addresses,
and this memo returns the results of two units ago: they repeat an earlier unit's byte
for byte, which the task host always checks. Expected: cheat_detected."""
import torch

_memo = {}


def matmul_chain(a, b):
    if a._base is None:
        return torch.relu(torch.mm(a, b))
    key = (a.data_ptr(), b.data_ptr(), tuple(a.shape), tuple(b.shape))
    if key not in _memo:
        _memo[key] = torch.relu(torch.mm(a, b))
    return _memo[key]
