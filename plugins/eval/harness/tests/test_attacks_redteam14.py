"""redteam14: work done beside the harness's own steps in the child, where the reference's
loop is idle and its gap is refunded to every candidate. Each test asserts the SECURE
outcome (test_attacks_redteam12.assert_no_gain_over: caught, or no gain over the
reference and over the same work done honestly); a test that fails is a hole. Run them
one by one by name: the VM is noisy.

Seen on the shared 2-core VM, at the commit that added them (cgroup v2 freezer and the
signal freezer alike): report_then_compute caught at 1 MB (the spot check: the stop landed
with a fifth to three quarters of the ReLU done), at 256 KB a pass charged to the
reference's median (speedup 1.0). Where outputs cross by the child's copy (forced on the
CPU by a test hook), report_then_copy with the doorbell silenced, before the doorbell:
caught at both sizes in one run, caught and charged to the reference (1.0) in another;
after it: charged (1.0 at 1 MB, 0.69 at 256 KB; 0.25 and 1.0). Its gain would be a
GPU's (there the host's copy waits behind the late kernel instead of racing it): the GPU
class is written, not run here."""

import os
import unittest

from tests import client
from tests.test_attacks_forged import show
from tests.test_attacks_redteam12 import assert_no_gain_over


class ReportThenComputeTest(unittest.TestCase):
    """The candidate's loop reports a call first (its outputs' addresses, a tensor kept
    across calls) and computes the call's outputs into it after the report, until the
    server's stop lands: the stretch between a report and the stop is one the
    reference's child spends idle, and its gap refunds it."""

    @classmethod
    def setUpClass(cls):
        cls.server = client.Server(mode="fork", max_children=1)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def run_on(self, task):
        def run_timed(candidate):
            request = client.request(candidate, "run", task, f"redteam14/{candidate}", language="python",
                                     limits={"timeout_s": 300}, options={"timing": {"enabled": True}})
            response = self.server.ask(request, timeout=900)[candidate]
            show(candidate, task, response)
            return response
        return run_timed

    def test_work_after_the_report_gains_nothing_on_a_small_call(self):
        assert_no_gain_over(self, self.run_on("redteam14/relu_256k"), "relu_kept", "report_then_compute")

    def test_work_after_the_report_gains_nothing_on_a_larger_call(self):
        assert_no_gain_over(self, self.run_on("redteam14/relu_1mb"), "relu_kept", "report_then_compute")


class ReportThenCopyTest(ReportThenComputeTest):
    """Where outputs cross by the child's copy into the slot (forced on the CPU by a test
    hook, as where the host cannot read the child; always on a GPU): the harness's ring
    silenced, the ReLU computed into the slot after the report, while the report goes to
    the server and the server's `take` to the task host."""

    @classmethod
    def setUpClass(cls):
        hooks = os.path.join(client.DATA, "hooks", "outputs_copied")
        cls.server = client.Server(mode="fork", max_children=1,
                                   extra_env={"PYTHONPATH": f"{client.HARNESS_DIR}:{hooks}"})

    def test_work_after_the_report_gains_nothing_on_a_small_call(self):
        assert_no_gain_over(self, self.run_on("redteam14/relu_256k"), "relu_kept", "report_then_copy")

    def test_work_after_the_report_gains_nothing_on_a_larger_call(self):
        assert_no_gain_over(self, self.run_on("redteam14/relu_1mb"), "relu_kept", "report_then_copy")

    def test_the_bracket_closes_at_the_ring(self):
        # A child that lingers 50 ms between its ring and its report: the host copied the
        # outputs at the ring, and the call's bracket closed there.
        response = self.run_on("redteam14/relu_256k")("ring_then_linger")
        self.assertEqual(response["status"], "pass", response)
        self.assertLess(response["metrics"]["timing_gap_ms"], 25, response)


try:
    import torch as _torch
    _HAS_CUDA = _torch.cuda.is_available()
except ImportError:
    _HAS_CUDA = False


@unittest.skipUnless(_HAS_CUDA, "needs a CUDA device (this interpreter has none)")
class ReportThenLaunchGpuTest(ReportThenComputeTest):
    """The same on a GPU: the ReLU is launched into the output buffer after the report,
    and runs on the device while the report goes to the server and the take to the
    task host (with the harness's ring, which has the host copy the slot at once; and
    with the ring silenced, which leaves the copy to the server's `take`)."""

    @classmethod
    def setUpClass(cls):
        cls.server = client.Server(mode="fork", device="cuda:0", max_children=1)

    def test_work_after_the_report_gains_nothing_on_a_small_call(self):
        assert_no_gain_over(self, self.run_on("redteam14/relu_1mb"), "relu_kept", "report_then_launch_gpu")

    def test_work_after_the_report_gains_nothing_on_a_larger_call(self):
        assert_no_gain_over(self, self.run_on("redteam12/relu_16mb"), "relu_kept", "report_then_launch_gpu")

    def test_work_after_the_report_with_the_bell_silenced_gains_nothing(self):
        assert_no_gain_over(self, self.run_on("redteam14/relu_1mb"), "relu_kept", "report_then_copy")


if __name__ == "__main__":
    unittest.main()
