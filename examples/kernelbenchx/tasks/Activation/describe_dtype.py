import torch


def describe_dtype(input: torch.Tensor) -> str:
    return "half" if input.dtype == torch.float16 else "other"

##################################################################################################################################################

import torch

test_results = {"fp32": describe_dtype(torch.ones(2)), "fp16": describe_dtype(torch.ones(2).half()),
                "none": None, "count": 3}
