import torch


class ModelNew(torch.nn.Module):
    """Right, but asks for 4 GiB of scratch memory: more than the device (or the memory
    limit) has, alone or not."""

    def __init__(self, *args):
        super().__init__()

    def forward(self, x):
        scratch = torch.empty(1 << 30, dtype=torch.float32)
        scratch.fill_(1.0)
        return torch.relu(x) + scratch[:1].mul(0.0)
