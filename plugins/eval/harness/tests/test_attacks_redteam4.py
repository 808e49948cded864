"""A fourth red team's candidates (tests/data/candidates/redteam4/), written against the
harness at 2cc4c0e assuming the candidate runs arbitrary code in its own process. Each
test starts its own fork-mode CPU server, prints what it returned, then asserts what
should happen: the cheat caught (fail, the right error_class), no gain (speedup <=
NO_GAIN), or an honest pass."""

import unittest

from tests import client
from tests.test_attacks import NO_GAIN
from tests.test_attacks_forged import show

TIMEOUT_S = 240


def run(name, task, language="cpp", options=None, task_format=None, max_children=2, **task_fields):
    server = client.Server(mode="fork", max_children=max_children)
    try:
        opts = {"trials": 2, "timing": {"enabled": True}}
        opts.update(options or {})
        req = client.request(name, "run", task, "redteam4/" + name, language=language,
                             task_format=task_format, options=opts, limits={"timeout_s": TIMEOUT_S},
                             **task_fields)
        response = server.ask(req, timeout=TIMEOUT_S + 200)[req["id"]]
    finally:
        server.close()
    show(name, task, response)
    lines = response.get("log_tail", "").splitlines()
    helper = [line for line in lines if line.startswith("helper: call")]
    print("\n".join(line for line in lines if not line.startswith("helper: call"))[-1500:])
    if helper:
        print(f"{len(helper)} helper lines in the log tail:", "; ".join(l.split("call ", 1)[1] for l in helper[-40:]))
    return response


class FreezeTest(unittest.TestCase):
    # Two holes of the signal freeze (procs.freeze_tree), closed by the cgroup freezer
    # (server/freezer.py), which these tests need. Under signals they passed: the first 3
    # of 3 runs on the loaded 2-core VM (5.0x, 5.2x and 2.66x, speedup_confirmed), the
    # second 2 of 3 (up to 2.5x); see the harness README's "What it does not protect".

    def setUp(self):
        freezer = client.machine_freezer()
        if freezer != "cgroup v2":
            self.skipTest(f"no cgroup v2 freezer here (freezer: {freezer}); the signal freeze "
                          "is known to lose to these candidates")

    def assert_no_gain(self, response):
        if response["status"] == "pass":
            self.assertLessEqual(response["metrics"]["speedup"], NO_GAIN, response)
        else:
            self.assertEqual(response["error_class"], "cheat_detected", response)

    def test_work_done_after_the_freeze_held_then_stopped_again(self):
        # Every timed call does no work in its bracket; a SIGCONT timer continues the
        # process after the freeze held, a thread computes the output while the task host
        # checks, then the process stops itself before still_frozen looks.
        self.assert_no_gain(run("self_stopped_after_work", "redteam3/row_energy", sizes={"cols": 12288}))

    def test_work_done_while_timers_hold_the_freeze_off(self):
        # Every timed call only posts its input to a thread; SIGCONT timers armed 100 us
        # apart keep the signal freeze from holding while the thread computes the output.
        self.assert_no_gain(run("freeze_stalled_by_timers", "redteam3/row_energy", sizes={"cols": 12288}))


class ExactComparisonTest(unittest.TestCase):
    # A hole, closed: judge/compare.py _differences computed |c - r| as
    # torch.sub(cand.to(int64), ref.to(int64)).abs_(), which wraps: c - r = -2**63 stays
    # -2**63 under abs(), a negative difference that passed the exact rule (atol 0) and
    # added nothing to max_abs_diff. It now takes the magnitude in float64 and counts any
    # unequal element as off by at least 1 (test_compare's integer test).
    def test_int64_elements_off_by_two_to_the_63(self):
        # Half of the elements are wrong by 2**63 (a logical shift for an arithmetic one).
        response = run("int64_logical_shift", "redteam3/int_mix", language="python",
                       options={"timing": {"enabled": False}})
        self.assertEqual((response["status"], response["error_class"]),
                         ("fail", "numerical_mismatch"), response)

    def test_float64_task_computed_in_float32(self):
        # A downcast: float32's error (1e-7 of the output) where the task asks for float64.
        response = run("matmul_float64_in_float32", "redteam4/matmul_float64", language="python")
        if response["status"] == "pass":
            self.assertLessEqual(response["metrics"]["speedup"], NO_GAIN, response)
        else:
            self.assertEqual(response["error_class"], "numerical_mismatch", response)


class HonestTest(unittest.TestCase):
    # A hole, closed (an honest kernel rejected): compare.tolerance gives integer outputs
    # atol 0, rtol 0 whatever they were computed from. Where the reference's own integer
    # output moves when its inputs move by an ulp (its rounding noise, measured as for
    # floating outputs), the judge now allows NOISE_FACTOR times that noise as a whole
    # (compare._within_integer_noise).
    def test_integer_output_of_a_float_reduction_in_another_order(self):
        # Honest (float64 sums, then the reference's rounding): a few elements of 524288
        # lie within float32's error of a half step and round the other way, off by one.
        for timing in (False, True):
            with self.subTest(timing=timing):
                response = run("quantized_matmul_float64", "redteam4/quantized_matmul", language="python",
                               options={"timing": {"enabled": timing}})
                self.assertEqual(response["status"], "pass", response)

    def test_integer_output_computed_in_a_lower_precision(self):
        # Not honest: the same output from bfloat16 products. Many more elements move than
        # the reference's rounding noise explains.
        response = run("quantized_matmul_bfloat16", "redteam4/quantized_matmul", language="python",
                       options={"timing": {"enabled": False}})
        self.assertEqual((response["status"], response["error_class"]), ("fail", "numerical_mismatch"),
                         response)


KBX_RULE = {"kind": "allclose", "atol": {"float32": 1e-4}, "rtol": {"float32": 1e-4}}


class KbxTest(unittest.TestCase):
    # A hole, closed (an honest candidate got no verdict, the task was blamed): the task
    # host sizes the timed units' buffers by the units of two runs (host.py _plan_units),
    # and fill() raised a task_error ("the inputs for ... are larger than for the first
    # trial's seed") when a later unit was larger, after the candidate's trials passed.
    # Tensors whose sizes differ between those two runs now refuse timing
    # (timing_refused), as calls that cannot cross do. The trials' buffers are sized by
    # the first trial's run too: a later trial of larger sizes is still the task's
    # task_error, saying that kforge needs the same shapes at every seed (a documented
    # limit of the format, harness README "What it does not protect"). Which of the two
    # this test sees depends on the widths its seeds draw.
    def test_honest_candidate_of_a_test_with_a_random_width(self):
        # The test draws its tensor's width at every run: each timed unit's arguments have
        # another size than the two runs the task host planned the buffers by.
        response = run("../kbx/row_sum_honest", "redteam4/kbx_random_width/row_sum", language="python",
                       task_format="kernelbenchx", options={"rule": KBX_RULE})
        if response["status"] == "pass":
            self.assertIn("timing_refused", response["flags"], response)
        else:
            self.assertEqual(response["error_class"], "task_error", response)
            self.assertIn("same shapes at every seed", response["message"], response)


if __name__ == "__main__":
    unittest.main()
