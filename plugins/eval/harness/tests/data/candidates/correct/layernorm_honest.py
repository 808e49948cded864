import torch


class ModelNew(torch.nn.Module):
    """LayerNorm written out, with its weight and bias."""

    def __init__(self, normalized_shape):
        super().__init__()
        self.ln = torch.nn.LayerNorm(normalized_shape)

    def forward(self, x):
        mean = x.mean(dim=-1, keepdim=True)
        var = x.var(dim=-1, unbiased=False, keepdim=True)
        return (x - mean) / torch.sqrt(var + self.ln.eps) * self.ln.weight + self.ln.bias
