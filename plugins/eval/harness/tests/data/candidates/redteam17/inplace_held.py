"""The forward in place on the tensor an object of the task's own holds (no layout
describes it: made in the child, held by it alone), trials included."""
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, held):
        return held.x.relu_().mul_(held.scale)
