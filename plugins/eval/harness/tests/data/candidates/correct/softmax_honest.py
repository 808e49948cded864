import torch


class ModelNew(torch.nn.Module):
    """Softmax written out in fp32."""

    def __init__(self, *args):
        super().__init__()

    def forward(self, x):
        e = torch.exp(x - x.max(dim=1, keepdim=True).values)
        return e / e.sum(dim=1, keepdim=True)
