# expect: native-stream
# language: cuda
# a stream from torch's pool, made current by a guard.
import torch
from torch.utils.cpp_extension import load_inline

cuda_source = r'''
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void relu_kernel(const float* x, float* y, int64_t n) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}

#include <c10/cuda/CUDAGuard.h>
#include <ATen/cuda/CUDAContext.h>

torch::Tensor relu_forward(torch::Tensor x) {
  auto y = torch::empty_like(x);
  auto side = at::cuda::getStreamFromPool();
  c10::cuda::CUDAStreamGuard guard(side);
  relu_kernel<<<(x.numel() + 255) / 256, 256, 0, side.stream()>>>(x.data_ptr<float>(), y.data_ptr<float>(), x.numel());
  return y;
}
'''


cpp_source = "torch::Tensor relu_forward(torch::Tensor x);"

relu = load_inline(name="hostile_relu", cpp_sources=cpp_source, cuda_sources=cuda_source,
                   functions=["relu_forward"], verbose=False)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return relu.relu_forward(x.contiguous())
