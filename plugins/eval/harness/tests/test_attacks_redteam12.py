"""redteam12: attacks on the timing boundary at 86919ad, where every timed call is
prepared outside any clock (server._loop_filled sends {"prepare": k, slot, inputs,
output, read} to an awake child; candidate._prepare_call answers it; only then does the
bracket open). Each test asserts the SECURE outcome (the attack gains nothing: speedup
at most tests.test_attacks.NO_GAIN, or it is caught); a test that fails is a hole. Run
them one by one by name (`-m unittest tests.test_attacks_redteam12.Class.test`): the VM
is noisy, and the suite's servers must not run beside another suite's.

Seen on the shared 2-core VM (one run each unless said):
- PreparedKbxUnitTest.test_unit_computed_in_the_prepare_window_gains_nothing: HOLE, pass at
  2948x and 211.6x (two runs), 23 of 23 units spot-checked, timing_charged_ms 0 / 0.315;
- PreparedScalarInputTest.test_scalar_part_computed_in_the_prepare_window_gains_nothing:
  HOLE, pass at 14.85x and 7.99x (two runs), 23 of 23 calls spot-checked;
- WakeInPublishTest (cpp): the process does wake inside the bracket before its thaw (68%
  of the ReLU done when the call came) but gained nothing here (1.064x, 1.003x);
- OutOfTurnTest: the candidate is blamed (runtime_error, cheat_detected).
The honest controls passed at 1.798x (noise: a reference loop of std 37 ms), 1.0,
0.986 and 1.0.

After the fixes (main, same VM): the kbx unit's and the scalar input's descriptions go
with the call (the task host keeps them apart: `input_values`): wave_prepared pass 1.437 with its
work charged by the clock (candidate_ms 68.57, reference 98.56 on a noisy loop),
scalar_input_prepared pass 0.71; a report before the call's command is the candidate's
runtime_error; a process continued while the inputs are published is cheat_detected
(server._loop_published; wake_in_publish_cpp was not caught by it in one run, pass 1.0)."""

import unittest

from tests import client
from tests.test_attacks import NO_GAIN
from tests.test_attacks_forged import show

def assert_work_charged(test, response):
    """The attack's verdict: caught, or charged at least most of the work it hid. The work
    is the reference's (its results are computed honestly), so a candidate median under
    0.8 of the reference's fastest call is work no clock saw; a speedup is not the test
    here, because these tasks' references swing between 60 and 180 ms a call on this VM
    (an honest control passed at 1.8x once)."""
    if response["status"] != "pass":
        test.assertEqual(response["error_class"], "cheat_detected", response)
        return
    metrics = response["metrics"]
    test.assertGreaterEqual(metrics["candidate_ms"], 0.8 * metrics["reference_ms_min"], response)


def assert_no_gain_over(test, run_timed, control, attack, over_control=NO_GAIN):
    """The attack caught, or no faster than the reference beyond NO_GAIN, or charged no
    less than its control's faster run over `over_control` (what a call costs as the
    server's clock sees it, the same work done honestly in the call or beside the
    harness's own steps): a hole fails both bounds, while the reference's swing between
    loops alone (a speedup) or a charge raised to the reference's median against a
    control slower than the reference (a candidate_ms) fails only one."""
    controls = []
    for name in (control, attack, control):
        response = run_timed(name)
        if name == attack:
            print("log:", response.get("log_tail", "")[-400:])
            if response["status"] != "pass":
                test.assertEqual(response["error_class"], "cheat_detected", response)
                return
            charged, speedup = response["metrics"]["candidate_ms"], response["metrics"]["speedup"]
        else:
            test.assertEqual(response["status"], "pass", response)
            controls.append(response["metrics"]["candidate_ms"])
    print(f"\ncandidate_ms: controls {controls}, attack {charged} (speedup {speedup})", flush=True)
    if speedup > NO_GAIN:
        test.assertGreaterEqual(charged * over_control, min(controls), (controls, charged, speedup))


RULE = {"kind": "allclose", "atol": {"float32": 1e-4}, "rtol": {"float32": 1e-4}}
WAVE = "redteam12/scalar_wave"  # a kernelbenchx function of two random floats only


class PreparedKbxUnitTest(unittest.TestCase):
    """A kernelbenchx unit's non-tensor arguments travel in the tape the prepare command
    carries (kbx_calls.Unit.describe), so the child knows them before the bracket opens;
    the harness's own LentUnit decodes them there."""

    @classmethod
    def setUpClass(cls):
        cls.server = client.Server(mode="fork", max_children=1)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def run_timed(self, candidate, task=WAVE, **timing):
        request = client.request(candidate, "run", task, f"redteam12/{candidate}", language="python",
                                 task_format="kernelbenchx", limits={"timeout_s": 300},
                                 options={"rule": RULE, "timing": {"enabled": True, **timing}})
        response = self.server.ask(request, timeout=900)[candidate]
        show(candidate, task, response)
        return response

    def test_honest_control(self):
        response = self.run_timed("wave_honest")
        self.assertEqual(response["status"], "pass", response)
        self.assertLessEqual(response["metrics"]["speedup"], 2.0, response)

    def test_unit_computed_in_the_prepare_window_gains_nothing(self):
        # Seen at 86919ad (inputs described in the prepare command): pass at 2948x and
        # 211.6x. Closed after: a description holding values made from the seed goes with
        # the call; seen then: pass at 1.437 (timing_by_clock, candidate_ms 68.57 charged
        # by the clock, reference 98.56 on a noisy loop).
        assert_work_charged(self, self.run_timed("wave_prepared", spot_check_rate=1.0))



SCALAR_INPUT = "redteam12/scalar_input_wave"  # KernelBench: x and a random float from get_inputs()


class PreparedScalarInputTest(unittest.TestCase):
    """A KernelBench task's non-tensor inputs are inline values of the inputs layout, which
    the prepare command carries before the bracket opens."""

    @classmethod
    def setUpClass(cls):
        cls.server = client.Server(mode="fork", max_children=1)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def run_timed(self, candidate, **timing):
        request = client.request(candidate, "run", SCALAR_INPUT, f"redteam12/{candidate}", language="python",
                                 limits={"timeout_s": 300},
                                 options={"rule": RULE, "timing": {"enabled": True, **timing}})
        response = self.server.ask(request, timeout=900)[candidate]
        show(candidate, SCALAR_INPUT, response)
        return response

    def test_honest_control(self):
        response = self.run_timed("scalar_input_honest")
        self.assertEqual(response["status"], "pass", response)
        self.assertLessEqual(response["metrics"]["speedup"], 2.0, response)

    def test_scalar_part_computed_in_the_prepare_window_gains_nothing(self):
        # Seen at 86919ad: pass at 14.85x and 7.99x. Closed after: inputs described with
        # values made from the seed go with the call; seen then: pass at 0.71.
        # The reference's loop on this task swings too (28 to 52 ms a call here), so the
        # test asks for the work charged, not a speedup bound.
        assert_work_charged(self, self.run_timed("scalar_input_prepared", spot_check_rate=1.0))



RELU16 = "redteam12/relu_16mb"  # KernelBench: ReLU over 16 MB (1024 x 4096 float32)


class WakeInPublishTest(unittest.TestCase):
    """Under the signal freezer a process can continue itself (a POSIX timer whose signal is
    SIGCONT) after the post-prepare freeze held: nothing checks it stays stopped until the
    thaw, so it can work while the host publishes and the server thaws, time the
    reference's gap refunds. Under either freezer its thread runs from the thaw on, beside
    the child's own way from its wake to its clock, which the reference's loop spends too.

    Judged against the same ReLU computed honestly in the call (the control, before and
    after the attack, in the same server against the same stored reference): a speedup
    bound alone let the reference's own swing decide (CI at 6b9f0f1, under ctest -j2: the
    C++ attack charged 1.563 ms a call against the control's 1.628, yet 1.191x against a
    reference timed anew at 1.861 ms where the control's was 1.674)."""

    @classmethod
    def setUpClass(cls):
        cls.server = client.Server(mode="fork", max_children=1)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def run_timed(self, candidate, **timing):
        language = "cpp" if candidate.endswith("_cpp") else "python"
        request = client.request(candidate, "run", RELU16, f"redteam12/{candidate}", language=language,
                                 limits={"timeout_s": 300},
                                 options={"timing": {"enabled": True, **timing}})
        response = self.server.ask(request, timeout=900)[candidate]
        show(candidate, RELU16, response)
        return response

    def assert_no_gain_over(self, control, attack):
        assert_no_gain_over(self, self.run_timed, control, attack)

    def test_work_woken_during_publish_gains_nothing(self):
        self.assert_no_gain_over("relu_kept_out", "wake_in_publish")

    def test_work_woken_during_publish_gains_nothing_cpp(self):
        self.assert_no_gain_over("relu_kept_out_cpp", "wake_in_publish_cpp")


class OutOfTurnTest(unittest.TestCase):
    """Messages out of turn around the prepare step: the candidate's fault, never the
    harness's, never a pass."""

    @classmethod
    def setUpClass(cls):
        cls.server = client.Server(mode="fork", max_children=1)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def run_timed(self, candidate, **timing):
        request = client.request(candidate, "run", "relu", f"redteam12/{candidate}", language="python",
                                 limits={"timeout_s": 120}, options={"timing": {"enabled": True, **timing}})
        response = self.server.ask(request, timeout=600)[candidate]
        show(candidate, "relu", response)
        return response

    def assert_candidates_fault(self, response):
        self.assertEqual(response["status"], "fail", response)
        self.assertIn(response["error_class"], ("runtime_error", "cheat_detected"), response)

    def test_prepared_for_twice(self):
        self.assert_candidates_fault(self.run_timed("prepared_twice"))

    def test_called_before_call(self):
        self.assert_candidates_fault(self.run_timed("called_before_call"))

    def test_called_early_with_fresh_outputs_unchecked(self):
        # spot_check_rate 0: what the bracket accounting alone does with a report that
        # came before the call's command (the default rate, 0.25, catches it per call).
        response = self.run_timed("called_early_fresh", spot_check_rate=0.0)
        if response["status"] == "pass":
            self.assertLessEqual(response["metrics"]["speedup"], NO_GAIN, response)
        else:
            self.assertNotIn(response["error_class"], ("harness_error", "task_error"), response)

    def test_called_early_with_fresh_outputs(self):
        self.assert_candidates_fault(self.run_timed("called_early_fresh"))


if __name__ == "__main__":
    unittest.main()
