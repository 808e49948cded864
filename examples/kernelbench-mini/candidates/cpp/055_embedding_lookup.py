import ctypes

import torch
import torch.nn as nn
import kforge_cpp

cpp_source = r'''
#include <cstdint>
#include <cstring>

extern "C" void embedding_forward(const int64_t* indices, const float* table, float* out,
                                  int64_t num_indices, int64_t embedding_dim) {
  #pragma omp parallel for
  for (int64_t i = 0; i < num_indices; ++i) {
    std::memcpy(out + i * embedding_dim, table + indices[i] * embedding_dim,
                sizeof(float) * embedding_dim);
  }
}
'''


class ModelNew(nn.Module):
    def __init__(self, num_embeddings: int, embedding_dim: int):
        super().__init__()
        self.embedding = nn.Embedding(num_embeddings, embedding_dim)
        self.lib = kforge_cpp.load(cpp_source)

    def forward(self, indices):
        indices = indices.contiguous()
        table = self.embedding.weight.contiguous()
        dim = table.shape[1]
        out = torch.empty(tuple(indices.shape) + (dim,), dtype=table.dtype, device=table.device)
        self.lib.embedding_forward(kforge_cpp.ptr(indices), kforge_cpp.ptr(table), kforge_cpp.ptr(out),
                                   ctypes.c_int64(indices.numel()), ctypes.c_int64(dim))
        return out
