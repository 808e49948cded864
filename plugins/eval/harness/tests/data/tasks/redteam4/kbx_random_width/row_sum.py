import torch


def row_sum(input: torch.Tensor, dim: int = -1, keepdim: bool = False) -> torch.Tensor:
    return input.sum(dim=dim, keepdim=keepdim)

##################################################################################################################################################

import random

import torch


def test_row_sum():
    # A random width, as tests of kernels over "any size" draw one: every seed makes
    # arguments (and results) of another size.
    results = {}
    width = random.randint(64, 4096)
    big = torch.randn(16, width)
    results["test_random"] = {"rows": row_sum(big), "cols": row_sum(big, 0, True)}
    return results


test_results = test_row_sum()
