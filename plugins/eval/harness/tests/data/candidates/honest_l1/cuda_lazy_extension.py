# language: cuda
# task: relu
# Honest: the extension is built lazily by a module-level function with `global`; the
# launcher uses the current stream, AT_DISPATCH, TORCH_CHECK and its own PYBIND11_MODULE;
# a comment names the stream API it avoids.
import os

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cuda_runtime.h>

template <typename scalar_t>
__global__ void relu_kernel(const scalar_t* __restrict__ x, scalar_t* __restrict__ y, int64_t n) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) y[i] = x[i] > scalar_t(0) ? x[i] : scalar_t(0);
}

torch::Tensor relu_forward(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor");
  TORCH_CHECK(x.is_contiguous(), "x must be contiguous");
  auto y = torch::empty_like(x);
  const int64_t n = x.numel();
  const int threads = 256;
  const int64_t blocks = (n + threads - 1) / threads;
  // The current stream: never cudaStreamCreate, timing happens there.
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND_HALF(x.scalar_type(), "relu_forward", ([&] {
    relu_kernel<scalar_t><<<blocks, threads, 0, stream>>>(
        x.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), n);
  }));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("relu_forward", &relu_forward, "ReLU (CUDA)", py::arg("x"));
}
"""

_extension = None


def _load():
    global _extension
    if _extension is None:
        os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")
        _extension = load_inline(name="relu_lazy_ext", cpp_sources="", cuda_sources=cuda_source,
                                 extra_cuda_cflags=["-O3", "--use_fast_math"], verbose=False)
    return _extension


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not x.is_contiguous():
            x = x.contiguous()
        return _load().relu_forward(x)
