import torch


def matmul_chain(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.relu(torch.mm(a, b))

##################################################################################################################################################

import torch


def test_matmul_chain():
    results = {}
    for i in range(4):
        a = torch.randn(384, 384)
        b = torch.randn(384, 384)
        results[f"test_case_{i}"] = matmul_chain(a, b)
    return results


test_results = test_matmul_chain()
