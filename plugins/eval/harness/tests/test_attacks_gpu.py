"""The hostile candidates of test_attacks.py as GPU candidates (issue 9): each hostile file
with a Triton kernel, and a subset with a load_inline CUDA kernel (each builds its own
extension, tens of seconds), run on cuda:0 by a server on that device. The attack's own
forward runs on a CPU copy of the input; its result goes back to the device through the
candidate's kernel, so every request really launches a Triton or CUDA kernel in its child.

Skipped where this interpreter has no CUDA device or no triton (CI). On a GPU host,
plugins/eval/tests/gpu_smoke.sh runs it; by hand, from plugins/eval/harness:
    python3 -m unittest tests.test_attacks_gpu -v"""

import importlib.util
import unittest

import torch

from tests import test_attacks
from tests.client import request

HAS_GPU = torch.cuda.is_available() and importlib.util.find_spec("triton") is not None

TRITON_WRAP = '''

import triton
import triton.language as tl


@triton.jit
def _kforge_copy(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(dst_ptr + offsets, tl.load(src_ptr + offsets, mask=mask), mask=mask)


_Attack = ModelNew


class ModelNew(_Attack):
    def forward(self, x):
        y = super().forward(x.cpu()).to(x.device).float().contiguous()
        out = torch.empty_like(y)
        _kforge_copy[(triton.cdiv(y.numel(), 1024),)](y, out, y.numel(), BLOCK=1024)
        return out
'''

CUDA_WRAP = '''

from torch.utils.cpp_extension import load_inline as _load_inline

_kforge_copy = _load_inline(
    name="kforge_attack_copy",
    cpp_sources="torch::Tensor copy(torch::Tensor src);",
    cuda_sources=r"""
__global__ void copy_kernel(const float* src, float* dst, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) dst[i] = src[i];
}
torch::Tensor copy(torch::Tensor src) {
  auto dst = torch::empty_like(src);
  long n = src.numel();
  copy_kernel<<<(n + 255) / 256, 256>>>(src.data_ptr<float>(), dst.data_ptr<float>(), n);
  return dst;
}
""",
    functions=["copy"])

_Attack = ModelNew


class ModelNew(_Attack):
    def forward(self, x):
        return _kforge_copy.copy(super().forward(x.cpu()).to(x.device).float().contiguous())
'''


class GpuFixture:
    DEVICE = "cuda:0"
    HIDE_CUDA_TOOLKIT = False  # load_inline needs the real one

    def honest(self, request_id):
        return request(request_id, "run", "relu", "triton_relu", language="triton",
                       limits={"timeout_s": 120})

    def honest_at_new_sizes(self, request_id):
        return request(request_id, "run", "relu", "triton_relu", language="triton",
                       sizes={"dim": 320}, limits={"timeout_s": 120})


@unittest.skipUnless(HAS_GPU, "needs a CUDA device and triton")
class TritonAttackTest(GpuFixture, test_attacks.AttackTest):
    """Every attack of test_attacks.AttackTest, as a Triton candidate."""

    WRAP = (TRITON_WRAP, "triton")


@unittest.skipUnless(HAS_GPU, "needs a CUDA device and triton")
class CudaAttackTest(GpuFixture, test_attacks.AttackFixture):
    """The attacks on the judge, the verdict, the secrets and the host, as load_inline
    CUDA candidates."""

    WRAP = (CUDA_WRAP, "cuda")
    TIMEOUT_S = 600  # each child builds its extension with nvcc
    attacks = test_attacks.AttackTest
    test_patching_the_comparator = attacks.test_patching_the_comparator
    test_patching_the_judge_from_cpp_holding_the_gil = \
        attacks.test_patching_the_judge_from_cpp_holding_the_gil
    test_answering_the_servers_stdout_through_proc = \
        attacks.test_answering_the_servers_stdout_through_proc
    test_shifting_blame_through_phase_lines = attacks.test_shifting_blame_through_phase_lines
    test_reading_api_keys_from_the_environment_and_proc = \
        attacks.test_reading_api_keys_from_the_environment_and_proc
    test_a_setsid_survivor = attacks.test_a_setsid_survivor
    test_the_store_and_the_results_cannot_be_reached = \
        attacks.test_the_store_and_the_results_cannot_be_reached


if __name__ == "__main__":
    unittest.main()
