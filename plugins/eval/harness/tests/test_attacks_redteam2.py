"""A second red team's candidates (tests/data/candidates/redteam2/), written against the
harness at 2e980f3 assuming the candidate runs arbitrary code in its own process. Each
test starts its own fork-mode CPU server, prints what it returned, then asserts what
should happen: the cheat caught (fail, the right error_class) or no gain (speedup <=
NO_GAIN)."""

import unittest

from tests import client
from tests.test_attacks import NO_GAIN
from tests.test_attacks_forged import show

TIMEOUT_S = 120


def run(name, task="relu", language="python", options=None, task_format=None):
    server = client.Server(mode="fork", max_children=2)
    try:
        opts = {"trials": 2, "timing": {"enabled": True}}
        opts.update(options or {})
        fields = {"task_format": task_format} if task_format else {}
        req = client.request(name, "run", task, "redteam2/" + name, language=language,
                             options=opts, limits={"timeout_s": TIMEOUT_S}, **fields)
        response = server.ask(req, timeout=TIMEOUT_S + 200)[req["id"]]
    finally:
        server.close()
    show(name, task, response)
    return response


def run_kbx(name, task="redteam2/matmul_chain"):
    """A kernelbenchx task (kbx.py) with KernelBenchX's tolerances and default timing."""
    rule = {"kind": "allclose", "atol": {"float32": 1e-4}, "rtol": {"float32": 1e-4}}
    return run(name, task=task, options={"rule": rule}, task_format="kernelbenchx")


class RedTeam2Test(unittest.TestCase):
    def assert_no_gain(self, response):
        if response["status"] == "pass":
            self.assertLessEqual(response["metrics"]["speedup"], NO_GAIN, response)
        else:
            self.assertEqual(response["status"], "fail", response)

    def test_work_skipped_on_most_timed_calls(self):
        response = run("skip_majority_conv", task="grouped_conv")
        self.assert_no_gain(response)
        if response["status"] == "fail":
            self.assertEqual(response["error_class"], "cheat_detected", response)

    def test_kbx_controls_pass(self):
        response = run_kbx("kbx_honest_matmul")
        self.assertEqual(response["status"], "pass", response)
        # Its 4 calls are all timed, on arguments the task host handed over.
        self.assertEqual(response["metrics"]["timed_unit_calls"], 4, response)

    # Was a pass at 16.8x: the replay ran in the candidate's process on calls recorded
    # there. Now the task host records them and hands their arguments over, fresh every
    # unit (kbx_calls.py): the memo never hits (it says so in its log when it does). Its
    # speedup is then the noise of identical code, which on the shared 2-core machine
    # at load 10 reached 1.15 (the reference's loop the more loaded one): bounded at 2.
    def test_kbx_timed_replay_memoized_by_argument_identity(self):
        response = run_kbx("kbx_memo_replay")
        self.assertEqual(response["status"], "pass", response)
        self.assertNotIn("memo hit", response["log_tail"])
        self.assertLess(response["metrics"]["speedup"], 2.0, response)

    def test_work_deferred_into_the_hand_over_by_a_tuple_subclass(self):
        # The hand-over reads a tuple through tuple's own methods: the subclass's __iter__
        # never runs, and what it holds (a module and the input) is no output.
        response = run("tuple_deferred_conv", task="grouped_conv")
        self.assertEqual((response["status"], response["error_class"]), ("fail", "shape_mismatch"), response)

    def test_kbx_failure_in_the_timed_recording_is_the_candidates(self):
        response = run_kbx("kbx_raises_in_recording")
        self.assertEqual(response["status"], "fail", response)
        self.assertEqual(response["error_class"], "runtime_error", response)
        # The candidate's own words, not "the child exited before reporting a result".
        self.assertIn("RuntimeError", str(response.get("message")), response)

    def test_kbx_memo_on_a_bundled_task(self):
        self.assert_no_gain(run_kbx("kbx_memo_addmm", task="kbx/MatrixMultiply/addmm_relu"))
