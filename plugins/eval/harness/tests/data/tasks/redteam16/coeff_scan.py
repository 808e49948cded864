import torch


def coeff_scan(coeffs):
    c = torch.tensor(coeffs, dtype=torch.float32)
    return torch.cumsum(c, 0) * 0.5 + c

##################################################################################################################################################

import torch


def test_coeff_scan():
    results = {}
    coeffs = torch.rand(60000).tolist()
    results["test_case_1"] = coeff_scan(coeffs)
    return results


test_results = test_coeff_scan()
