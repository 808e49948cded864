# CUDA C++ candidate in KernelBench's load_inline format: the kernel and its launcher in
# cuda_source, the declaration in cpp_source, compiled by torch when the module is imported.
import torch
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}

torch::Tensor relu_forward(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda() && x.is_contiguous() && x.scalar_type() == torch::kFloat32,
              "relu_forward wants a contiguous float32 CUDA tensor");
  auto y = torch::empty_like(x);
  const int64_t n = x.numel();
  const int threads = 256;
  const int64_t blocks = (n + threads - 1) / threads;
  relu_kernel<<<blocks, threads>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
  return y;
}
"""

cpp_source = "torch::Tensor relu_forward(torch::Tensor x);"

relu = load_inline(name="kforge_relu_cuda", cpp_sources=cpp_source, cuda_sources=cuda_source,
                   functions=["relu_forward"], verbose=False)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return relu.relu_forward(x.contiguous())
