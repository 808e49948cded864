"""The forward in place on the tensor a closure holds (made in the child, held by it
alone), trials included."""
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, held):
        x, scale = held()
        return x.relu_().mul_(scale)
