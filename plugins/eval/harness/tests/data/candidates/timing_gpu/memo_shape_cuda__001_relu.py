# expect: cheat_detected
# Hostile (issue 12, timing): a CUDA ReLU that, after the trials, computes one output per
# input shape and returns it for every later call. The spot check of a later timed call
# compares it with the reference's output for that call's own inputs.
import torch
from torch.utils.cpp_extension import load_inline

TRIALS = 5  # gpu_check.py's runs: options.trials is the default

cuda_source = r"""
#include <torch/extension.h>

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}

torch::Tensor relu_forward(torch::Tensor x) {
  auto y = torch::empty_like(x);
  const int64_t n = x.numel();
  relu_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
  return y;
}
"""

cpp_source = "torch::Tensor relu_forward(torch::Tensor x);"

relu = load_inline(name="kforge_memo_shape_relu", cpp_sources=cpp_source,
                   cuda_sources=cuda_source, functions=["relu_forward"], verbose=False)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0
        self.by_shape = {}

    def forward(self, x):
        self.calls += 1
        key = tuple(x.shape)
        if self.calls > TRIALS + 1 and key in self.by_shape:
            return self.by_shape[key]
        y = relu.relu_forward(x.contiguous())
        self.by_shape[key] = y
        return y
