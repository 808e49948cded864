import torch


def list_wave(values: list, scale: float) -> torch.Tensor:
    v = torch.tensor(values, dtype=torch.float32)
    return torch.sin(v * scale) * v + torch.tanh(v)

##################################################################################################################################################

import torch


def test_list_wave():
    results = {}
    values = [round(v, 3) for v in torch.rand(60000).tolist()]
    scale = round(float(torch.rand(1)) * 3.0, 4)
    results["test_case_1"] = list_wave(values, scale)
    return results


test_results = test_list_wave()
