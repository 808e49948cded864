# expect: native-python-api
# language: cuda
# the binding calls back into Python: torch.relu through pybind11.
import torch
from torch.utils.cpp_extension import load_inline

cuda_source = r'''
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void relu_kernel(const float* x, float* y, int64_t n) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}

#include <pybind11/pybind11.h>
namespace py = pybind11;

torch::Tensor relu_forward(torch::Tensor x) {
  auto relu = py::module_::import("torch").attr("relu");
  return relu(x).cast<torch::Tensor>();
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
