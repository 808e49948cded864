import torch
import torch.nn as nn


class Model(nn.Module):
    """Causal masking of attention scores: entries above the diagonal become -inf.

    Input (B, H, S, S); y[..., i, j] = x[..., i, j] if j <= i else -inf.
    """

    def __init__(self):
        super().__init__()

    def forward(self, scores: torch.Tensor) -> torch.Tensor:
        seq_len = scores.shape[-1]
        keep = torch.ones(seq_len, seq_len, dtype=torch.bool, device=scores.device).tril()
        return scores.masked_fill(~keep, float("-inf"))


batch_size = 16
num_heads = 16
seq_len = 2048


def get_inputs():
    return [torch.randn(batch_size, num_heads, seq_len, seq_len)]


def get_init_inputs():
    return []
