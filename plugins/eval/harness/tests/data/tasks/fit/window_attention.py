import torch
import torch.nn as nn


class Model(nn.Module):
    """Swin-like: patches, then attention inside windows of patches. The image size is
    asserted, and the patch grid must divide into windows (image divisible by
    patch_size * window_size = 28)."""

    def __init__(self, img_size, patch_size, window_size, embed_dim, num_heads):
        super().__init__()
        self.img_size = img_size
        self.window = window_size
        self.patch = nn.Conv2d(3, embed_dim, patch_size, stride=patch_size)
        self.attn = nn.MultiheadAttention(embed_dim, num_heads, batch_first=True)

    def forward(self, x):
        _, _, height, width = x.shape
        assert height == self.img_size and width == self.img_size, \
            f"input image size ({height}*{width}) doesn't match model ({self.img_size})"
        x = self.patch(x)
        batch, channels, grid_h, grid_w = x.shape
        w = self.window
        assert grid_h % w == 0 and grid_w % w == 0, "the patch grid must divide into windows"
        x = x.view(batch, channels, grid_h // w, w, grid_w // w, w)
        x = x.permute(0, 2, 4, 3, 5, 1).reshape(-1, w * w, channels)
        out, _ = self.attn(x, x, x, need_weights=False)
        return out


batch_size = 64
img_size = 224
patch_size = 4
window_size = 7
embed_dim = 96
num_heads = 3


def get_inputs():
    return [torch.randn(batch_size, 3, img_size, img_size)]


def get_init_inputs():
    return [img_size, patch_size, window_size, embed_dim, num_heads]
