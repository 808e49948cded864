import torch
import torch.nn as nn


class Model(nn.Module):
    """Attention within windows of an image, with heads (Swin-like): the image must be
    divisible into windows and the embedding into heads, which a plain size_scale does
    not know (image 56 * 0.25 = 14 is no multiple of the 8-pixel window)."""

    def __init__(self, embed_dim, num_heads, window):
        super().__init__()
        self.window = window
        self.attention = nn.MultiheadAttention(embed_dim, num_heads, batch_first=True)

    def forward(self, x):
        batch, height, width, channels = x.shape
        w = self.window
        windows = x.view(batch, height // w, w, width // w, w, channels)
        windows = windows.permute(0, 1, 3, 2, 4, 5).reshape(-1, w * w, channels)
        out, _ = self.attention(windows, windows, windows, need_weights=False)
        return out


batch_size = 2
image = 56
embed_dim = 32
num_heads = 4
window = 8


def get_inputs():
    return [torch.randn(batch_size, image, image, embed_dim)]


def get_init_inputs():
    return [embed_dim, num_heads, window]
