"""Honest control for writeback_left_behind: ReLU once (tasks/redteam6/relu_twice applies
it twice), nothing else."""
import torch


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
