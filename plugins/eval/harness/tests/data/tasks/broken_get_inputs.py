import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


dim = 64


def get_inputs():
    raise ValueError("this task cannot make its inputs")


def get_init_inputs():
    return []
