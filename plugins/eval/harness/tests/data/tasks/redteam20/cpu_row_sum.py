import torch


def cpu_row_sum(x: torch.Tensor) -> torch.Tensor:
    return x.sum(dim=1)

##################################################################################################################################################

import torch


def test_cpu_row_sum():
    # x stays on the CPU whatever the device: on a GPU task the child's LentUnit gives the
    # function a CPU copy of the slot's (device) view, filled before the call and written
    # back after it (kbx_calls.LentUnit.fill / write_back), both refunded whole as copies.
    results = {}
    x = torch.randn(4096, 4096)
    results["test_case_1"] = cpu_row_sum(x)
    return results


test_results = test_cpu_row_sum()
