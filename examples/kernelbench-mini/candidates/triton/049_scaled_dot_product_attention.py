import math

import torch
import triton
import triton.language as tl


@triton.jit
def attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, seq_len, head_dim, scale, BLOCK_M: tl.constexpr,
                     BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr):
    # Online-softmax attention: a block of queries walks over all keys once, keeping a running
    # max (m_i), normaliser (l_i) and output accumulator; the score matrix is never stored.
    pid_m = tl.program_id(axis=0)
    head = tl.program_id(axis=1).to(tl.int64)
    base = head * seq_len * head_dim
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    d_mask = offs_d < head_dim
    q = tl.load(q_ptr + base + offs_m[:, None] * head_dim + offs_d[None, :],
                mask=(offs_m[:, None] < seq_len) & d_mask[None, :], other=0.0)
    m_i = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, BLOCK_D), dtype=tl.float32)
    for start in range(0, seq_len, BLOCK_N):
        keys = start + offs_n
        key_mask = keys < seq_len
        k_t = tl.load(k_ptr + base + keys[None, :] * head_dim + offs_d[:, None],
                      mask=d_mask[:, None] & key_mask[None, :], other=0.0)
        s = tl.dot(q, k_t, input_precision="ieee") * scale
        s = tl.where(key_mask[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp(m_i - m_new)
        p = tl.exp(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_ptr + base + keys[:, None] * head_dim + offs_d[None, :],
                    mask=key_mask[:, None] & d_mask[None, :], other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p, v, input_precision="ieee")
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(o_ptr + base + offs_m[:, None] * head_dim + offs_d[None, :], out,
             mask=(offs_m[:, None] < seq_len) & d_mask[None, :])


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v):
        q = q.contiguous()
        k = k.contiguous()
        v = v.contiguous()
        batch, heads, seq_len, head_dim = q.shape
        out = torch.empty_like(q)
        block_d = max(16, triton.next_power_of_2(head_dim))  # tl.dot needs dims >= 16
        block_m, block_n = 32, 32
        grid = (triton.cdiv(seq_len, block_m), batch * heads)
        attention_kernel[grid](q, k, v, out, seq_len, head_dim, 1.0 / math.sqrt(head_dim),
                               BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_D=block_d, num_warps=4)
        return out
