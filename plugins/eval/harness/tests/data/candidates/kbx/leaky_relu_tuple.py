import torch


def leaky_relu(input, negative_slope=0.01):
    # Returns a 1-tuple: test_results gets leaf test_case_1[0] where the reference has test_case_1.
    return (torch.where(input >= 0, input, input * negative_slope),)
