import torch


def scale_shift_fp16(input: torch.Tensor, scale: float, shift: float = 0.0) -> torch.Tensor:
    return input * scale + shift

##################################################################################################################################################

import torch

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def test_scale_shift_fp16():
    results = {}
    x = torch.linspace(-4, 4, 257, device=DEVICE).to(torch.float16)
    results["test_case_1"] = scale_shift_fp16(x, 0.37)
    results["test_case_2"] = scale_shift_fp16(x, 1.9, shift=0.25)
    y = torch.randn(32, 128, device=DEVICE).to(torch.float16)
    results["test_random"] = scale_shift_fp16(y, 0.61, 0.5)
    return results


test_results = test_scale_shift_fp16()
