"""Candidates that rewrite what their own process reports (tests/data/candidates/forged/,
written by a red team against the harness as it stood): the timed calls' times and the
guard's record rewritten on their way out (a module attribute the child's channel looks
up, which no audit event sees), shaped against the server's statistics; work hidden where
the child's clock does not look; the reference's timing slowed from outside. None may
gain a speedup the server's clock does not show; honest controls pass.

Each test starts its own fork-mode CPU server (the reference's timing is cached per
server: a fresh one makes each attack meet a fresh reference timing) and prints what it
saw, then asserts."""

import unittest

from tests import client
from tests.test_attacks import NO_GAIN

TIMING = {"enabled": True}
TIMEOUT_S = 120


def run(name, task="relu", language="python", options=None, server=None, request_id=None):
    own = server is None
    server = server or client.Server(mode="fork", max_children=2)
    try:
        opts = {"trials": 2, "timing": dict(TIMING)}
        opts.update(options or {})
        req = client.request(request_id or name, "run", task, "forged/" + name, language=language,
                             options=opts, limits={"timeout_s": TIMEOUT_S})
        response = server.ask(req, timeout=TIMEOUT_S + 200)[req["id"]]
    finally:
        if own:
            server.close()
    show(name, task, response)
    return response


def show(name, task, response):
    """Prints what the server returned for attack `name` on `task`: what a reader of the
    test's output needs to tell a near miss from a pass."""
    metrics = response.get("metrics") or {}
    keys = ("speedup", "candidate_ms", "reference_ms", "timing_charged_ms", "timing_gap_ms",
            "reference_gap_ms", "confirm_gap_ms", "timing_spot_checks", "timing_measured_again", "max_abs_diff")
    print(f"\n[{name} on {task}] status={response.get('status')} "
          f"error_class={response.get('error_class')} flags={response.get('flags')}\n  "
          + " ".join(f"{k}={metrics[k]:.4g}" if isinstance(metrics.get(k), float) else f"{k}={metrics.get(k)}"
                     for k in keys)
          + f"\n  message={str(response.get('message'))[:600]!r}", flush=True)


def check(name, language="cpp"):
    """L1 (the `check` action) on forged/`name`."""
    server = client.Server(mode="fork", max_children=1)
    try:
        req = client.request("check-" + name, "check", "relu", "forged/" + name, language=language)
        response = server.ask(req, timeout=120)[req["id"]]
    finally:
        server.close()
    print(f"\n[L1 check {name}] status={response.get('status')} "
          f"error_class={response.get('error_class')} message={str(response.get('message'))[:300]!r}",
          flush=True)
    return response


class ForgedReportTest(unittest.TestCase):
    def assert_no_gain(self, response):
        """The candidate's fail, or a pass whose speedup is what its work is worth (it
        computes as the reference does: about 1)."""
        if response["status"] == "pass":
            self.assertLessEqual(response["metrics"]["speedup"], NO_GAIN, response)
        else:
            self.assertEqual(response["status"], "fail", response)

    def assert_passed(self, response):
        self.assertEqual(response["status"], "pass", response)

    def test_honest_controls_pass(self):
        self.assert_passed(run("honest_relu"))
        self.assert_passed(run("honest_conv", task="grouped_conv"))
        self.assert_passed(run("honest_softmax", task="softmax"))

    def test_times_rewritten_in_the_channel_shaped_against_the_medians(self):
        self.assert_no_gain(run("forge_report_median"))
        self.assert_no_gain(run("forge_report_conv", task="grouped_conv"))

    def test_times_rewritten_to_a_thousandth(self):
        self.assert_no_gain(run("forge_report_tiny"))

    def test_every_time_rewritten_alike(self):
        self.assert_no_gain(run("forge_report_plain_conv", task="grouped_conv"))

    def test_work_hidden_in_the_hand_over_shaped_against_the_noise(self):
        self.assert_no_gain(run("hidden_work_mad", task="softmax"))

    def test_the_cpu_kept_busy_while_the_reference_is_timed(self):
        self.assert_no_gain(run("slow_reference_cpu", task="grouped_conv"))

    def test_a_cpp_candidate_that_passes_l1_and_rewrites_its_times(self):
        self.assertEqual(check("cpp_l1_clean_forge")["status"], "pass")
        self.assert_no_gain(run("cpp_l1_clean_forge", language="cpp"))
        self.assert_passed(run("cpp_honest_relu", language="cpp"))

    def test_torch_in_a_cpp_candidate_is_refused_by_l1_and_the_guard(self):
        self.assertEqual(check("cpp_l1_clean_torch")["error_class"], "checker_rejected")
        control = run("cpp_guard_control", language="cpp")
        self.assertEqual(control["error_class"], "cheat_detected", control)

    # Known gap (README, "What the harness does not protect against"): the guard's record
    # travels in the child's own report, which a rewritten channel can empty; L1 is what
    # stops the torch call in front of it.
    @unittest.expectedFailure
    def test_the_guards_record_dropped_from_the_report(self):
        response = run("cpp_guard_stripped", language="cpp")
        self.assertEqual(response["error_class"], "cheat_detected", response)

    def test_an_honest_candidate_beside_one_that_hogs_the_cpu(self):
        server = client.Server(mode="fork", max_children=2)
        try:
            hog = client.request("neighbor_hog", "run", "relu", "forged/neighbor_hog",
                                 language="python", options={"trials": 3, "timing": {"enabled": False}},
                                 limits={"timeout_s": TIMEOUT_S})
            server.send(hog)
            self.assert_passed(run("honest_conv", task="grouped_conv", server=server,
                                   request_id="honest-beside-hog"))
            server.receive(1, timeout=TIMEOUT_S + 100)
        finally:
            server.close()


if __name__ == "__main__":
    unittest.main()
