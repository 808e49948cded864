import torch


def no_results(input):
    return input * 2

##################################################################################################################################################

import torch

results = {"x": no_results(torch.ones(3))}  # test_results is never set
