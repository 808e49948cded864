import torch


def costly_test_code(x):
    return x * 2 + 1

##################################################################################################################################################

import time


def test_costly_test_code():
    # The test code's own work (making inputs, here a pause) is not the function's: a
    # timed call replays only the function's calls, for the candidate as for the reference.
    time.sleep(0.3)
    results = {}
    for size in (16, 64):
        results[f"test_{size}"] = costly_test_code(torch.randn(size))
    return results


test_results = test_costly_test_code()
