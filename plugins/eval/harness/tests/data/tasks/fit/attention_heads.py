import torch
import torch.nn as nn


class Model(nn.Module):
    """Multi-head self-attention: the embedding must stay divisible by the heads."""

    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.attn = nn.MultiheadAttention(embed_dim, num_heads, batch_first=True)

    def forward(self, x):
        out, _ = self.attn(x, x, x, need_weights=False)
        return out


batch_size = 16
seq_len = 1024
embed_dim = 512
num_heads = 8


def get_inputs():
    return [torch.randn(batch_size, seq_len, embed_dim)]


def get_init_inputs():
    return [embed_dim, num_heads]
