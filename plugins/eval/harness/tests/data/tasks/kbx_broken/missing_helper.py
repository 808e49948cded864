import torch


def missing_helper(input):
    return input * 2

##################################################################################################################################################

import torch
from kforge_no_such_helpers import rand_tensor  # KernelBenchX's utils, absent here

test_results = {"x": missing_helper(rand_tensor((4,)))}
