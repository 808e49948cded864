import torch


def row_sum(input: torch.Tensor, dim: int = -1, keepdim: bool = False) -> torch.Tensor:
    return input.sum(dim=dim, keepdim=keepdim)

##################################################################################################################################################

import torch

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def test_row_sum():
    results = {}
    x = torch.arange(12, dtype=torch.float32, device=DEVICE).reshape(3, 4)
    results["test_case_1"] = row_sum(x)
    results["test_case_2"] = row_sum(x, dim=0)
    results["test_case_3"] = row_sum(x, keepdim=True)
    big = torch.randn(16, 1000, device=DEVICE)
    results["test_random"] = {"rows": row_sum(big), "cols": row_sum(big, 0, True)}
    return results


test_results = test_row_sum()
