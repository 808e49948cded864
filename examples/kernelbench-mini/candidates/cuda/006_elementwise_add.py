# CUDA C++ candidate in KernelBench's load_inline format, with four elements per thread
# through float4 loads (16-byte accesses) and a scalar tail.
import torch
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void add_kernel(const float* __restrict__ a, const float* __restrict__ b,
                           float* __restrict__ out, int64_t n) {
  const int64_t i = (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) * 4;
  if (i + 3 < n) {
    const float4 x = *reinterpret_cast<const float4*>(a + i);
    const float4 y = *reinterpret_cast<const float4*>(b + i);
    *reinterpret_cast<float4*>(out + i) = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
  } else {
    for (int64_t j = i; j < n; ++j) out[j] = a[j] + b[j];
  }
}

torch::Tensor add_forward(torch::Tensor a, torch::Tensor b) {
  TORCH_CHECK(a.sizes() == b.sizes(), "add_forward wants tensors of one shape");
  auto out = torch::empty_like(a);
  const int64_t n = a.numel();
  const int threads = 256;
  const int64_t blocks = ((n + 3) / 4 + threads - 1) / threads;
  add_kernel<<<blocks, threads>>>(a.data_ptr<float>(), b.data_ptr<float>(), out.data_ptr<float>(), n);
  return out;
}
"""

cpp_source = "torch::Tensor add_forward(torch::Tensor a, torch::Tensor b);"

add = load_inline(name="kforge_add_cuda", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["add_forward"], verbose=False)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return add.add_forward(a.contiguous(), b.contiguous())
