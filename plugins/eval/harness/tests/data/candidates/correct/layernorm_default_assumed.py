import torch


class ModelNew(torch.nn.Module):
    """Hostile: builds the same LayerNorm, but its forward assumes the default weight of
    ones and bias of zeros (a normalisation without the affine part)."""

    def __init__(self, normalized_shape):
        super().__init__()
        self.ln = torch.nn.LayerNorm(normalized_shape)

    def forward(self, x):
        mean = x.mean(dim=-1, keepdim=True)
        var = x.var(dim=-1, unbiased=False, keepdim=True)
        return (x - mean) / torch.sqrt(var + self.ln.eps)
