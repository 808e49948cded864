# language: cuda
# task: 006_elementwise_add
# Honest: CUDA launch configuration in dim3 variables named threads/blocks, an OpenMP-free
# launcher using the current stream, Markdown-ish docstrings ("## Steps"), error messages
# that mention a "system (...)" and "thread (...)", Python sets and lists used as such.
"""## Elementwise add

## Steps
1. check the inputs (the operating system (Linux) does not matter);
2. launch one thread (per element) on the current stream.
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void add_kernel(const float* __restrict__ a, const float* __restrict__ b,
                           float* __restrict__ out, int64_t n) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}

torch::Tensor add_forward(torch::Tensor a, torch::Tensor b) {
  TORCH_CHECK(a.sizes() == b.sizes(), "shapes differ");
  auto out = torch::empty_like(a);
  const int64_t n = a.numel();
  dim3 threads(256);
  dim3 blocks((n + threads.x - 1) / threads.x);
  add_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
      a.data_ptr<float>(), b.data_ptr<float>(), out.data_ptr<float>(), n);
  return out;
}
"""

cpp_source = "torch::Tensor add_forward(torch::Tensor a, torch::Tensor b);"

extension = load_inline(name="add_dim3", cpp_sources=cpp_source, cuda_sources=cuda_source,
                        functions=["add_forward"], verbose=False)

SUPPORTED = {torch.float32}


class ModelNew(nn.Module):
    """Adds two tensors with one CUDA thread (per element)."""

    def __init__(self):
        super().__init__()
        self.seen_shapes = set()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        if a.dtype not in SUPPORTED:
            raise TypeError(f"unsupported dtype {a.dtype}: this system (CUDA) needs float32")
        self.seen_shapes.add(tuple(a.shape))
        order = list(range(a.dim()))
        order.reverse()
        return extension.add_forward(a.contiguous(), b.contiguous())
