import torch


def tensor_list_sum(xs: list, scale: float) -> torch.Tensor:
    return torch.stack(xs).sum(0) * scale

##################################################################################################################################################

import torch


def test_tensor_list_sum():
    results = {}
    xs = [torch.randn(64) for _ in range(1000)]
    scale = round(float(torch.rand(1)) * 3.0, 4)
    results["test_case_1"] = tensor_list_sum(xs, scale)
    return results


test_results = test_tensor_list_sum()
