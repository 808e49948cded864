import torch


def describe_dtype(input):
    return "half" if input.dtype == torch.float16 else "other"
