# expect: compile_error
# nvcc rejects the kernel: it stores through a pointer to const. eval.compile.cuda (L2)
# reports nvcc's file:line on any machine with nvcc, before a GPU is involved; on a GPU
# host load_inline's build fails the same way ("Error building extension").
import torch
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void relu_kernel(const float* __restrict__ x, const float* __restrict__ y, int64_t n) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}

torch::Tensor relu_forward(torch::Tensor x) {
  auto y = torch::empty_like(x);
  const int64_t n = x.numel();
  const int threads = 256;
  relu_kernel<<<(n + threads - 1) / threads, threads>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
  return y;
}
"""

cpp_source = "torch::Tensor relu_forward(torch::Tensor x);"

relu = load_inline(name="kforge_broken_relu_compile", cpp_sources=cpp_source, cuda_sources=cuda_source,
                   functions=["relu_forward"], verbose=False)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return relu.relu_forward(x.contiguous())
