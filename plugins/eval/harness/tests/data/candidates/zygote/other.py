import torch

# kforge-other-marker-9c4d: another candidate's code, which no other child may hold.


class ModelNew(torch.nn.Module):
    def __init__(self, *args):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)
