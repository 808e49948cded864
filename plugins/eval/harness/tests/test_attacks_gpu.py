"""The hostile candidates of test_attacks.py on a GPU, run on cuda:0 by a server on that
device.

- TritonAttackTest, CudaAttackTest (issue 9): the hostile_l3/ files with a Triton kernel,
  and two with a load_inline CUDA kernel (each builds its own extension, tens of
  seconds). The attack's own forward runs on a CPU copy of the input; its result goes
  back to the device through the candidate's kernel, so every request really launches a
  Triton or CUDA kernel in its child. The floods, the unsandboxed controls and the C++
  compile cache are the CPU suite's (nothing of them differs on a GPU).
- GpuHostileTest (issue 19): hostile_v2/gpu_*.py, the classes only a device has: a
  patched clock over microsecond kernels, a private stream made current, a kernel
  launched after the call was reported, the GPU kept busy while the reference is timed,
  device memory beyond the admitted share, and an honest CUDA graph.

Budget: the whole file under 4 minutes on an H100. Skipped, saying why, where this
interpreter has no CUDA device or no triton (CI). On a GPU host,
plugins/eval/tests/gpu_smoke.sh runs it; by hand, from plugins/eval/harness:
    python3 -m unittest tests.test_attacks_gpu -v"""

import importlib.util
import unittest

import torch

from tests import test_attacks
from tests.client import request

HAS_CUDA = torch.cuda.is_available()
HAS_TRITON = importlib.util.find_spec("triton") is not None
HAS_GPU = HAS_CUDA and HAS_TRITON
WHY_SKIPPED = (f"needs a CUDA device and triton (this interpreter: CUDA device "
               f"{'found' if HAS_CUDA else 'not found'}, triton "
               f"{'importable' if HAS_TRITON else 'not importable'})")

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


# test_attacks.AttackTest's attacks on the verdict, the secrets and the host, which a GPU
# child meets with its outputs in device memory and a CUDA context of its own; the rest
# (floods, malformed lines and exceptions, the unsandboxed controls, the C++ compile
# cache) are the CPU suite's: nothing of them differs on a GPU.
_GPU_ATTACKS = [
    "test_patching_the_comparator", "test_patching_the_reporter", "test_patching_the_rule",
    "test_patching_the_reference", "test_patching_the_judge_from_cpp_holding_the_gil",
    "test_patching_the_timer", "test_an_impossible_time",
    "test_forging_result_lines_on_the_childs_pipe",
    "test_answering_the_servers_stdout_through_proc",
    "test_shifting_blame_through_phase_lines", "test_the_store_and_the_results_cannot_be_reached",
    "test_a_log_file_replaced_by_links_to_secrets",
    "test_reading_api_keys_from_the_environment_and_proc", "test_a_setsid_survivor",
]


@unittest.skipUnless(HAS_GPU, WHY_SKIPPED)
class TritonAttackTest(GpuFixture, test_attacks.AttackFixture):
    """The attacks of test_attacks.AttackTest named in _GPU_ATTACKS, as Triton
    candidates."""

    WRAP = (TRITON_WRAP, "triton")


for _name in _GPU_ATTACKS:
    setattr(TritonAttackTest, _name, getattr(test_attacks.AttackTest, _name))


@unittest.skipUnless(HAS_GPU, WHY_SKIPPED)
class CudaAttackTest(GpuFixture, test_attacks.AttackFixture):
    """Two attacks on the verdict and the secrets as load_inline CUDA candidates (each
    child builds its extension with nvcc: two builds are what the budget allows)."""

    WRAP = (CUDA_WRAP, "cuda")
    TIMEOUT_S = 600  # each child builds its extension with nvcc
    attacks = test_attacks.AttackTest
    test_patching_the_comparator = attacks.test_patching_the_comparator
    test_reading_api_keys_from_the_environment_and_proc = \
        attacks.test_reading_api_keys_from_the_environment_and_proc


@unittest.skipUnless(HAS_GPU, WHY_SKIPPED)
class GpuHostileTest(GpuFixture, test_attacks.V2Fixture):
    """Issue 19's classes that only a device has (hostile_v2/gpu_*.py), Triton
    candidates of the relu task timed with the defaults."""

    TIMEOUT_S = 120

    def test_a_clock_patched_to_report_a_thousandth(self):
        # A few microseconds of kernel hide in a fixed slack of 50 us.
        self.v2_attack("gpu-clock", "gpu_clock_patched", "cheat_detected", language="triton",
                       timing=test_attacks.TIMED)

    def test_a_private_stream_made_current(self):
        # Its work on the private stream is inside the server's bracket (the child syncs
        # the whole device before it answers): rejected, or charged to no gain.
        self.v2_no_gain("gpu-side-stream", "gpu_side_stream_current", language="triton",
                        timing=test_attacks.TIMED)

    def test_a_kernel_launched_after_the_call_was_reported(self):
        self.v2_attack("gpu-after-report", "gpu_launch_after_report", "cheat_detected",
                       language="triton", timing=test_attacks.TIMED)

    def test_a_kernel_queued_to_run_between_calls(self):
        # Queued in a second CUDA context of its own (the child's whole-device waits do
        # not cover it), it would run on the device while the child's processes are
        # frozen, waiting for the next call's inputs; they reach the slot only once that
        # call's bracket is open (host.py's publish). 64M elements: the work is far beyond
        # the bracket's slack. A CUDA candidate: it builds its extension (tens of seconds).
        # Seen on an H200 (2026-11-27): the queued wait stalls the child's own next call
        # (the child spinning, the GPU idle) until its wall-clock limit: `timeout`, the
        # candidate's, and the next honest job passes. Any other end must be a
        # candidate's failure or no gain.
        req = self.v2("gpu-between-calls", "gpu_kernel_between_calls", language="cuda",
                      timing=test_attacks.TIMED, sizes={"batch_size": 4096, "dim": 16384},
                      limits={"timeout_s": 150})
        response = self.server.ask(req, timeout=300)[req["id"]]
        if response["status"] == "pass":
            self.assertLessEqual(response["metrics"]["speedup"], test_attacks.NO_GAIN, response)
        elif response["error_class"] != "timeout":
            self.assert_candidate_failed(response)
        self.assert_nothing_leaked(response)
        self.assert_healthy(req["id"])

    def test_the_gpu_kept_busy_while_the_reference_is_timed(self):
        # Sizes no other request uses: the reference is timed after this candidate's
        # trials, while its spinning kernels run.
        # The reference's loop is timed with the candidate's child stopped: its spinning
        # kernels finish first or run inside the candidate's own brackets; no gain.
        self.v2_no_gain("gpu-slow-reference", "gpu_slow_the_reference", language="triton",
                        timing=test_attacks.TIMED, sizes={"dim": 288})

    def test_device_memory_beyond_the_admitted_share(self):
        # Admitted with 4 GiB, it holds up to 60 GiB; an honest job beside it passes.
        limits = {"device_memory_mb": 4096}
        hog = self.v2("gpu-hog", "gpu_memory_hog", language="triton", limits=limits)
        beside = request("gpu-hog-beside", "run", "relu", "triton_relu", language="triton",
                         limits={"timeout_s": self.TIMEOUT_S, **limits})
        responses = self.server.ask(hog, beside, timeout=self.TIMEOUT_S + 150)
        self.assert_candidate_failed(responses["gpu-hog"], "out_of_memory")
        self.assertIn("device_memory_exceeded", responses["gpu-hog"]["flags"])
        self.assertEqual(responses["gpu-hog-beside"]["status"], "pass", responses["gpu-hog-beside"])
        self.assert_healthy("gpu-hog")

    def test_an_honest_cuda_graph_replayed_on_its_own_inputs(self):
        self.v2_pass("gpu-graph", "gpu_honest_cuda_graph", language="triton",
                     timing=test_attacks.TIMED)


if __name__ == "__main__":
    unittest.main()
