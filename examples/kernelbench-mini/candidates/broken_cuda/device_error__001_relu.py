# expect: device_error
# Illegal memory access on the GPU. The launcher passes the input's address in elements as
# an "offset" and the kernel subtracts it: every lane reads near address 0, which no
# allocation maps. The fault poisons this process's CUDA context; the next job (a fresh
# child) must be unaffected.
import torch
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t offset, int64_t n) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) y[i] = fmaxf(x[i - offset], 0.f);
}

torch::Tensor relu_forward(torch::Tensor x) {
  auto y = torch::empty_like(x);
  const int64_t n = x.numel();
  const int64_t offset = reinterpret_cast<int64_t>(x.data_ptr<float>()) / static_cast<int64_t>(sizeof(float));
  const int threads = 256;
  relu_kernel<<<(n + threads - 1) / threads, threads>>>(x.data_ptr<float>(), y.data_ptr<float>(), offset, n);
  return y;
}
"""

cpp_source = "torch::Tensor relu_forward(torch::Tensor x);"

relu = load_inline(name="kforge_broken_relu_fault", cpp_sources=cpp_source, cuda_sources=cuda_source,
                   functions=["relu_forward"], verbose=False)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return relu.relu_forward(x.contiguous())
