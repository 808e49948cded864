import torch
import torch.nn as nn


class Model(nn.Module):
    """The winning class of each row's votes: scores = votes @ weights (small whole
    numbers held in float32, so every score is exact), then the first class with the
    highest score (torch.argmax's tie rule), as int64. Ties are common (scores are small
    integers over 256 classes): the output is exact, it has no rounding noise, but inputs
    moved by an ulp break every tie at random, and the harness measures that as noise."""

    def forward(self, votes, weights):
        return torch.argmax(votes @ weights, dim=1)


rows = 4096
inner = 32
cols = 256


def get_inputs():
    return [torch.randint(0, 3, (rows, inner)).float(), torch.randint(0, 3, (inner, cols)).float()]


def get_init_inputs():
    return []
