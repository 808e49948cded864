import torch


def leaky_relu(input, negative_slope=0.01):
    return torch.clamp(input, min=0) + torch.clamp(input, max=0) * negative_slope

##################################################################################################################################################
# A KernelBenchX candidate file may carry test code: the task's is the one that runs.
raise RuntimeError("the candidate's own test part must never run")
