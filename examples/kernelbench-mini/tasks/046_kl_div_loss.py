import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """KL divergence KL(targets || predictions) between row distributions, batch mean.

    Both inputs are probability rows (softmax outputs); the result is a 0-d tensor.
    """

    def __init__(self):
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return F.kl_div(torch.log(predictions), targets, reduction="batchmean")


batch_size = 8192
dim = 8192


def get_inputs():
    predictions = torch.softmax(torch.randn(batch_size, dim), dim=1)
    targets = torch.softmax(torch.randn(batch_size, dim), dim=1)
    return [predictions, targets]


def get_init_inputs():
    return []
