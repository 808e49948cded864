import torch


def no_separator(input):
    return input * 2

# A separator too short to be one (a comment banner):
##########

test_results = {"x": no_separator(torch.ones(3))}
