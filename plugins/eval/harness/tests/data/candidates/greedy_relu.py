import torch


class ModelNew(torch.nn.Module):
    """Right, but needs about 1 GiB of scratch memory beside its inputs (more than the
    reference): fine with the device to itself under a 2 GiB budget, too much beside a
    neighbour that holds most of it."""

    def __init__(self, *args):
        super().__init__()

    def forward(self, x):
        scratch = torch.ones(256 << 20)  # 1 GiB
        return torch.relu(x) + scratch[:1].mul(0.0)
