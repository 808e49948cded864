import torch
import triton
import triton.language as tl


@triton.jit
def fake_quantize_kernel(x_ptr, y_ptr, n_elements, scale, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid.to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    # Correctly rounded division, so the value rounded is the one torch rounds.
    v = tl.math.div_rn(x, scale)
    r = tl.floor(v + 0.5)
    # floor(v + 0.5) sends ties up; torch.round sends them to the even neighbour.
    is_tie = (r - v) == 0.5
    r_is_odd = (r - 2.0 * tl.floor(r * 0.5)) == 1.0
    r = tl.where(is_tie & r_is_odd, r - 1.0, r)
    q = tl.minimum(tl.maximum(r, -128.0), 127.0)
    tl.store(y_ptr + offsets, q * scale, mask=mask)


class ModelNew(torch.nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        block = 1024
        fake_quantize_kernel[(triton.cdiv(n, block),)](x, y, n, self.scale, BLOCK_SIZE=block)
        return y
