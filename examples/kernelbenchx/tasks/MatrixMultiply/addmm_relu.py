import torch


def addmm_relu(bias: torch.Tensor, a: torch.Tensor, b: torch.Tensor, alpha: float = 1.0) -> torch.Tensor:
    return torch.relu(torch.addmm(bias, a, b, alpha=alpha))

##################################################################################################################################################

import torch

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def test_addmm_relu():
    results = {}
    a = torch.tensor([[1.0, 2.0], [3.0, 4.0]], device=DEVICE)
    b = torch.tensor([[1.0, -1.0], [-1.0, 1.0]], device=DEVICE)
    bias = torch.tensor([0.5, -0.5], device=DEVICE)
    results["test_case_1"] = addmm_relu(bias, a, b)
    results["test_case_2"] = addmm_relu(bias, a, b, alpha=2.0)
    for m, k, n in ((32, 64, 16), (17, 33, 9)):
        a = torch.randn(m, k, device=DEVICE)
        b = torch.randn(k, n, device=DEVICE)
        bias = torch.randn(n, device=DEVICE)
        results[f"test_random_{m}x{k}x{n}"] = addmm_relu(bias, a, b)
    return results


test_results = test_addmm_relu()
