import torch


def leaky_relu(input: torch.Tensor, negative_slope: float = 0.01) -> torch.Tensor:
    return torch.where(input >= 0, input, input * negative_slope)

##################################################################################################################################################

import torch

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def test_leaky_relu():
    results = {}
    fixed = torch.tensor([-2.0, -0.5, 0.0, 0.5, 2.0], device=DEVICE)
    results["test_case_1"] = leaky_relu(fixed)
    results["test_case_2"] = leaky_relu(fixed, negative_slope=0.2)
    results["test_case_3"] = leaky_relu(fixed, 0.0)
    outs = []
    for _ in range(3):
        x = torch.randn(64, 33, device=DEVICE)
        outs.append(leaky_relu(x, negative_slope=0.1))
    results["test_random"] = outs
    results["slope_used"] = 0.1
    return results


test_results = test_leaky_relu()
