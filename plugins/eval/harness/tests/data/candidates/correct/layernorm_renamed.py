import torch


class ModelNew(torch.nn.Module):
    """LayerNorm with its parameters under other names (gamma, beta) and a scratch
    parameter of its own that no reference weight matches: the weights reach gamma and
    beta by shape order, and the scratch one is reported as not copied."""

    def __init__(self, normalized_shape):
        super().__init__()
        self.gamma = torch.nn.Parameter(torch.ones(normalized_shape))
        self.beta = torch.nn.Parameter(torch.zeros(normalized_shape))
        self.scratch = torch.nn.Parameter(torch.zeros(3, 3))

    def forward(self, x):
        mean = x.mean(dim=-1, keepdim=True)
        var = x.var(dim=-1, unbiased=False, keepdim=True)
        return (x - mean) / torch.sqrt(var + 1e-5) * self.gamma + self.beta
