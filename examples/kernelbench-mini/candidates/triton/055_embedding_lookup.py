import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def embedding_kernel(indices_ptr, table_ptr, out_ptr, embedding_dim, BLOCK_D: tl.constexpr):
    token = tl.program_id(axis=0)
    col_block = tl.program_id(axis=1)
    row = tl.load(indices_ptr + token)  # int64
    cols = col_block * BLOCK_D + tl.arange(0, BLOCK_D)
    mask = cols < embedding_dim
    values = tl.load(table_ptr + row * embedding_dim + cols, mask=mask, other=0.0)
    tl.store(out_ptr + token.to(tl.int64) * embedding_dim + cols, values, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, num_embeddings: int, embedding_dim: int):
        super().__init__()
        self.embedding = nn.Embedding(num_embeddings, embedding_dim)

    def forward(self, indices):
        indices = indices.contiguous()
        table = self.embedding.weight.contiguous()
        dim = table.shape[1]
        out = torch.empty(tuple(indices.shape) + (dim,), dtype=table.dtype, device=table.device)
        block = min(1024, triton.next_power_of_2(dim))
        grid = (indices.numel(), triton.cdiv(dim, block))
        embedding_kernel[grid](indices, table, out, dim, BLOCK_D=block)
        return out
