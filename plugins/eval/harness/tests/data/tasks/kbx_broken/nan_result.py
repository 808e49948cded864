import torch


def nan_result(input):
    return torch.log(input)

##################################################################################################################################################

import torch

test_results = {"x": nan_result(torch.tensor([-1.0, 1.0]))}
