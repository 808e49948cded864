import torch


def scalar_power(base, exponent, size=8):
    # Only Python numbers as arguments: nothing crosses in a buffer.
    return torch.full((size,), base) ** exponent

##################################################################################################################################################

import random


def test_scalar_power():
    results = {}
    results["test_random"] = [scalar_power(random.uniform(0.5, 2.0), exponent) for exponent in (2, 3)]
    return results


test_results = test_scalar_power()
