# expect: cheat_detected
# Hostile (issue 12, timing): KernelBench's non_default_stream trick in CUDA C++: the
# matmul is launched on a stream from the pool and nothing waits for it, so device
# events on the current stream time only the launch. The harness waits for the whole
# device after each timed call: the gap is a rejection.
import torch
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAStream.h>

constexpr int TILE = 16;

__global__ void matmul_kernel(const float* a, const float* b, float* c, int n) {
  __shared__ float as[TILE][TILE], bs[TILE][TILE];
  const int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
  float acc = 0.f;
  for (int t = 0; t < n; t += TILE) {
    as[threadIdx.y][threadIdx.x] = (row < n && t + threadIdx.x < n) ? a[row * n + t + threadIdx.x] : 0.f;
    bs[threadIdx.y][threadIdx.x] = (col < n && t + threadIdx.y < n) ? b[(t + threadIdx.y) * n + col] : 0.f;
    __syncthreads();
    for (int i = 0; i < TILE; ++i) acc += as[threadIdx.y][i] * bs[i][threadIdx.x];
    __syncthreads();
  }
  if (row < n && col < n) c[row * n + col] = acc;
}

torch::Tensor matmul_forward(torch::Tensor a, torch::Tensor b) {
  const int n = a.size(0);
  auto c = torch::empty_like(a);
  auto side = c10::cuda::getStreamFromPool();
  // The side stream waits for what the current stream wrote, then runs alone.
  cudaEvent_t ready;
  cudaEventCreateWithFlags(&ready, cudaEventDisableTiming);
  cudaEventRecord(ready, at::cuda::getCurrentCUDAStream());
  cudaStreamWaitEvent(side.stream(), ready, 0);
  cudaEventDestroy(ready);
  const dim3 block(TILE, TILE), grid((n + TILE - 1) / TILE, (n + TILE - 1) / TILE);
  matmul_kernel<<<grid, block, 0, side.stream()>>>(a.data_ptr<float>(), b.data_ptr<float>(),
                                                   c.data_ptr<float>(), n);
  return c;
}
"""

cpp_source = "torch::Tensor matmul_forward(torch::Tensor a, torch::Tensor b);"

matmul = load_inline(name="kforge_side_stream_matmul", cpp_sources=cpp_source,
                     cuda_sources=cuda_source, functions=["matmul_forward"], verbose=False)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return matmul.matmul_forward(a.contiguous(), b.contiguous())
