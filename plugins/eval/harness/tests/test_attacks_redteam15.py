"""redteam15: attacks on the timing boundary at 5854494 (main HEAD). Each test asserts
the SECURE outcome (caught, or no gain over the reference and over the same work done
honestly: test_attacks_redteam12.assert_no_gain_over); a test that fails is a hole. Run
them one by one by name: the VM is noisy (2 cores).

The holes (the harness's own per-leaf work in the child, inside the reference's
measurements, which a candidate's own timed call leaves out; the real work per call,
ReLU then unbind(0) into 2048 row views, is the reference's own forward, byte for byte):
- rows_lean_loop (its own _timed_call: the forward timed honestly, addresses reported,
  no Clock.settle, output_leaves or _hand_over checks): pass at 1.414x (cgroup v2
  freezer, candidate_ms 1.309 against honest controls 2.609 / 2.590, reference_ms
  1.851, speedup_confirmed) and 1.578x (signal freezer, candidate_ms 1.422, reference_ms
  2.244, speedup_confirmed). Clock.settle runs inside the reference's event clock, once
  per output leaf, so reference_ms itself holds the harness's per-output work.
- rows_lean_liar (the same, reporting 0.05 ms a call: charged what the server's clock
  vouches for, the bracket less the reference's gap, which holds the reference child's
  hand-over of 2048 outputs): pass at 3.651x (candidate_ms 0.7252, timing_charged_ms
  0.6752, reference_ms 2.648, controls 2.648 / 2.548), 1.0 (charged to the reference's
  median, timing_charged_ms 2.041), 33.48x (candidate_ms 0.05, timing_charged_ms 0,
  reference_ms 1.674, speedup_over_10x, speedup_confirmed) on the cgroup v2 freezer;
  5.836x (candidate_ms 0.4415, reference_ms 2.577) on the signal freezer.
- rows_lean_liar on 512 outputs of 2048 elements (relu_rows512): pass at 1.294x and
  1.446x (candidate_ms 1.057 / 0.9456 against honest controls 1.343 / 1.368, both
  speedup_confirmed); rows_lean_loop there 0.9128. On 64 outputs of 16384 (relu_rows64):
  no gain, 1.0 three times (charged to the reference's median).
- repeated by unittest: rows_lean_loop 1.371x (candidate_ms 1.401 vs controls 2.409 /
  2.630) and 1.845x (1.524 vs 2.613 / 2.812); rows_lean_liar on 512 outputs 5.552x
  (candidate_ms 0.1593, reference_ms 0.8842, controls 1.321 / 0.884).
- Not holes, and not kept here (no gain over the control seen): the same lean call on a
  one-output ReLU of 1 MB (1.0, 1.0: charged to the reference's median); a ReLU in a
  native thread beside the harness's own hand-over of 2048 outputs: 1.0 and 0.99; a
  fused stack and ReLU in a native thread woken at the thaw, beside the harness's feed of
  2048 inputs: candidate_ms 5.606, 8.696, 4.59, 3.196 against controls 8.113, 8.695,
  3.71: mixed, not called a hole.
- ins_lean_liar (2048 inputs, the per-input model.feed left out): no gain seen, charged
  to the reference's median twice (reference_ms 0.58 / 0.54 is within the clock's noise).

Seen beside them: the honest controls, the reference's own forward in the harness's own
loop, got 0.687x, 0.715x, 1.0, 1.0, 0.8875 (rows) and 0.119x (ins_honest: charged 4.257
ms by the clock after measured again), 0.73x, 0.76x, 0.86x, 0.83x: an identical candidate
timed slower than the reference on many-leaf tasks.

After the fixes (harness_ms refunded up to max_harness_refund_ms, outputs settled after
the events, the hand-over's common case checked in one step; same VM, cgroup v2): every
test here passes, the attacks at 1.0 (charged to the reference's median) or below
(rows_lean_loop 0.65x); the honest rows controls pay the harness's work beyond the bound
(0.38x and 0.53x at 2048 outputs, 0.77x to 0.97x at 512), as the README says."""

import unittest

from tests import client
from tests.test_attacks_forged import show
from tests.test_attacks_redteam12 import assert_no_gain_over


class _Timed(unittest.TestCase):
    TASK = None

    @classmethod
    def setUpClass(cls):
        cls.server = client.Server(mode="fork", max_children=1)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def run_timed(self, candidate, task=None, **timing):
        task = task or self.TASK
        language = "cpp" if candidate.endswith("_cpp") else "python"
        request = client.request(candidate, "run", task, f"redteam15/{candidate}", language=language,
                                 limits={"timeout_s": 300},
                                 options={"timing": {"enabled": True, **timing}})
        response = self.server.ask(request, timeout=900)[candidate]
        show(candidate, task, response)
        return response


class LeanLoopManyOutputsTest(_Timed):
    """The harness's per-output work in the child (Clock.settle inside the event clock;
    output_leaves and _hand_over's checks inside the bracket) is O(outputs) Python; the
    reference's loop pays it, a candidate's own loop need not."""
    TASK = "redteam15/relu_rows"

    def test_honest_control(self):
        response = self.run_timed("rows_honest")
        self.assertEqual(response["status"], "pass", response)
        # The bracket holds the hand-over of 2048 outputs: the reference's gap (the
        # bracket less its events and less the trusted round trip measured before the
        # call) is no less than nothing. It was -6 ms while the round trip carried the
        # layouts' JSON, which then counted as the machine's load.
        self.assertGreater(response["metrics"]["reference_gap_ms"], 0.0, response["metrics"])

    def test_lean_loop_gains_nothing(self):
        assert_no_gain_over(self, self.run_timed, "rows_honest", "rows_lean_loop")

    def test_lean_loop_reporting_nothing_gains_nothing(self):
        assert_no_gain_over(self, self.run_timed, "rows_honest", "rows_lean_liar")

    def test_lean_loop_reporting_nothing_gains_nothing_512_outputs(self):
        run_timed = lambda candidate: self.run_timed(candidate, task="redteam15/relu_rows512")  # noqa: E731
        assert_no_gain_over(self, run_timed, "rows_honest", "rows_lean_liar")

    def test_lean_loop_reporting_nothing_gains_nothing_64_outputs(self):
        run_timed = lambda candidate: self.run_timed(candidate, task="redteam15/relu_rows64")  # noqa: E731
        assert_no_gain_over(self, run_timed, "rows_honest", "rows_lean_liar")


class LeanLoopManyInputsTest(_Timed):
    """The harness's per-input work in the child (model.feed: a .to() per input) is inside
    the bracket, outside the event clock: the reference's gap, which charged() refunds."""
    TASK = "redteam15/relu_many_inputs"

    def test_lean_loop_reporting_nothing_gains_nothing(self):
        assert_no_gain_over(self, self.run_timed, "ins_honest", "ins_lean_liar")


if __name__ == "__main__":
    unittest.main()
