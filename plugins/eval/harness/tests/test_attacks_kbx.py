"""Hostile kernelbenchx candidates against the timed unit's hand-over (kbx_calls.py): the
task host runs the test code, records the function's calls and hands their arguments
over through its buffers, fresh per unit; the child replays them and hands what they
return back; the host checks every unit's results for poison and their names, always
checks a unit whose results repeat an earlier one's, and spot-checks a drawn share of
the others against the reference function on the same arguments. The candidates
(tests/data/candidates/kbx_timing/) know all this and run arbitrary code in their
process. One fork-mode CPU server with one child runs them one after the other, so that
one's timing does not load another's; each verdict is printed before it is asserted."""

import unittest

from tests import client
from tests.test_attacks_forged import show

RULE = {"kind": "allclose", "atol": {"float32": 1e-4}, "rtol": {"float32": 1e-4}}
MATMUL = "redteam2/matmul_chain"  # 4 random 384x384 products: milliseconds a unit
ADDMM = "kbx/MatrixMultiply/addmm_relu"  # 2 fixed 2x2 cases, 2 random ones


class KbxTimingAttackTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = client.Server(mode="fork", max_children=1)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def run_timed(self, candidate, task=MATMUL, **timing):
        """The verdict of a timed run of `candidate` (a file of kbx_timing/, or another
        folder's path) on `task`, printed."""
        path = candidate if "/" in candidate else f"kbx_timing/{candidate}"
        request = client.request(candidate, "run", task, path, language="python",
                                 task_format="kernelbenchx", limits={"timeout_s": 300},
                                 options={"rule": RULE, "timing": {"enabled": True, **timing}})
        response = self.server.ask(request, timeout=900)[candidate]
        show(candidate, task, response)
        return response

    def assert_caught(self, response, text):
        self.assertEqual((response["status"], response["error_class"]), ("fail", "cheat_detected"), response)
        self.assertIn(text, response["message"])

    def test_honest_candidates_pass_every_check_at_the_reference_s_speed(self):
        # Every unit checked (rate 1): the hand-over, the replay and the checks pass
        # honest work. On matmul_chain (units of ~100 ms) its time is the reference's,
        # within a loaded 2-core machine's noise (IdenticalCodeTest's bounds); addmm_relu's
        # units last ~0.1 ms, where that noise alone moves a median by 2x.
        for candidate, task in (("redteam2/kbx_honest_matmul", MATMUL), ("kbx/addmm_relu_honest", ADDMM)):
            with self.subTest(candidate):
                response = self.run_timed(candidate, task, spot_check_rate=1.0)
                self.assertEqual(response["status"], "pass", response)
                metrics = response["metrics"]
                self.assertEqual(metrics["timing_spot_checks"], metrics["timing_calls"])
                if task == MATMUL:
                    self.assertGreater(metrics["speedup"], 0.5)
                    self.assertLess(metrics["speedup"], 2.0)

    def test_a_memo_by_content_never_hits(self):
        # Every unit's arguments are made from a seed drawn for it; addmm_relu's fixed
        # cases, which the memo would answer from the trials, are not timed. It says in
        # its log when it hits; its speed is identical code's, which load alone moves
        # (by up to 1.15 on the shared 2-core machine at load 10).
        for task in (MATMUL, ADDMM):
            with self.subTest(task):
                response = self.run_timed("memo_content", task)
                self.assertEqual(response["status"], "pass", response)
                self.assertNotIn("memo hit (timed)", response["log_tail"])
                self.assertLess(response["metrics"]["speedup"], 2.0, response)
        # The control: the fixed cases are the same in both trials, and hit there.
        self.assertIn("memo hit (trial)", response["log_tail"])
        self.assertEqual(response["metrics"]["timed_unit_calls_left_out"], 2)

    def test_a_memo_by_the_slot_s_addresses_is_caught_by_the_repeat_check(self):
        self.assert_caught(self.run_timed("memo_address"), "spot check failed")

    def test_skipping_the_work_once_timed_is_caught_by_the_spot_checks(self):
        # Told apart from a trial by its arguments being views of the lent slot; noise,
        # fresh every unit, so only the drawn checks see it: missed with probability
        # 0.75^23 in the first loop, and its claimed speedup is confirmed by a second
        # (0.75^46 in all).
        self.assert_caught(self.run_timed("skip_when_replayed"), "spot check failed")

    def test_skipping_one_call_of_every_unit_is_caught(self):
        # Told apart by counting calls (the trials make 8); the skipped call is named.
        self.assert_caught(self.run_timed("skip_by_count"), "spot check failed: call #3:")

    def test_writing_the_result_into_an_argument_is_caught(self):
        # The same work, an input changed in place: only a checked unit compares the
        # arguments, so the rate is raised to make missing it negligible (0.5^23).
        self.assert_caught(self.run_timed("write_argument", spot_check_rate=0.5),
                           "the candidate changed call #0's argument #0 in place")


if __name__ == "__main__":
    unittest.main()
