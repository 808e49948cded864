"""The comparison's whole-output statistics, presets and outputs without information,
through the real server: each class of candidate the per-element rule alone let through
(or wrongly rejected)."""

import json
import unittest

import torch

from kforge_harness.reference.reference import WEIGHT_DRAWS
from kforge_harness.server.seeds import RequestSeeds
from kforge_harness.tasks.runner import seed_everything
from tests import client

KERNELBENCH_V0 = {"kind": "allclose", "atol": 1e-2, "rtol": 1e-2}
# Per element, and the variation check that normalisation adds to every rule (no
# max_rel_l2, which alone would reject a constant 0 for tiny_output at once).
PER_ELEMENT = {"kind": "allclose", "atol": 1e-4, "rtol": 1e-4}


def req(request_id, task, candidate=None, **options):
    return client.request(request_id, "run", task, candidate and f"correct/{candidate}",
                          language="python", options=options)


def gate_opens(model_seed):
    """Whether tasks/gated.py's gate is open at the weights of `model_seed`: its only
    parameter is the first draw after the seeding every model is built under."""
    seed_everything(model_seed)
    return float(torch.rand(())) > 0.5


def secret_where(draws_open):
    """A run's secret at which the gated task's weight draws open its gate as
    `draws_open` says (a list of booleans, draw 0 first)."""
    for secret in range(1, 100000):
        seeds = RequestSeeds(secret, "gated")
        model_seeds = [seeds.model] + [seeds.model_redrawn(k) for k in range(1, len(draws_open))]
        if [gate_opens(seed) for seed in model_seeds] == draws_open:
            return secret
    raise AssertionError(f"no secret draws {draws_open}")


SHUT_THEN_OPEN = secret_where([False, True])
OPEN_AT_ONCE = secret_where([True])
NEVER_OPEN = secret_where([False] * WEIGHT_DRAWS)


class ComparisonThroughTheServerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = client.Server(max_children=2)
        cls.responses = cls.server.ask(
            req("garbage", "softmax", "softmax_partial_garbage"),
            req("garbage-per-element", "softmax", "softmax_partial_garbage", rule=PER_ELEMENT),
            req("softmax-honest", "softmax", "softmax_honest"),
            req("fp16-v0", "relu", "relu_fp16", rule=KERNELBENCH_V0),
            req("fp16-default", "relu", "relu_fp16"),
            client.request("fp32", "run", "relu", "python_relu", language="python"),
            req("tiny-honest", "tiny_output", "tiny_output_honest", rule=PER_ELEMENT),
            req("tiny-zeros", "tiny_output", "tiny_output_zeros", rule=PER_ELEMENT),
            req("tiny-reference", "tiny_output", rule=PER_ELEMENT),
            req("tiny-default", "tiny_output", "tiny_output_honest"),
            client.request("dead-relu", "run", "dead_relu"),
            req("dead-relu-zeros", "dead_relu", "tiny_output_zeros"),
            client.request("unvariable", "run", "near_constant", "zeros_near_constant"),
            client.request("unvariable-reference", "run", "near_constant"),
            client.request("gated-redrawn", "run", "gated", options={"seed": SHUT_THEN_OPEN}),
            req("gated-redrawn-zeros", "gated", "tiny_output_zeros", seed=SHUT_THEN_OPEN),
            client.request("gated-open", "run", "gated", options={"seed": OPEN_AT_ONCE}),
            client.request("gated-never", "run", "gated", options={"seed": NEVER_OPEN}),
            timeout=900)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def check(self, case, status, error_class="", text=""):
        response = self.responses[case]
        detail = json.dumps(response, indent=1)[:3000]
        self.assertEqual(response["status"], status, detail)
        self.assertEqual(response["error_class"], error_class, detail)
        self.assertIn(text, response["message"], detail)
        return response

    def test_partial_garbage_within_atol_fails_the_default_preset(self):
        # Every element is within atol=1e-4, so the per-element rule passes it (the
        # control); over the whole output it is wrong by far more than rounding.
        self.check("garbage-per-element", "pass")
        response = self.check("garbage", "fail", "numerical_mismatch", "off as a whole")
        metrics = response["metrics"]
        self.assertGreater(metrics["rel_l2_error"], 0.05, metrics)
        self.assertGreater(metrics["share_over_coarse"], 0.3, metrics)
        honest = self.check("softmax-honest", "pass")["metrics"]
        self.assertLess(honest["rel_l2_error"], 1e-5, honest)
        self.assertEqual(honest["share_over_coarse"], 0.0, honest)

    def test_fp16_compute_of_an_fp32_task_shows_in_the_metrics(self):
        loose = self.check("fp16-v0", "pass")["metrics"]
        # fp16 keeps 11 bits: relative errors up to 2**-11 ~ 4.9e-4, not fp32's ~6e-8.
        self.assertGreater(loose["max_rel_error"], 1e-4, loose)
        self.assertLess(loose["max_rel_error"], 1e-3, loose)
        self.assertGreater(loose["mean_rel_error"], 1e-5, loose)
        self.assertGreater(loose["rel_l2_error"], 1e-5, loose)
        self.check("fp16-default", "fail", "numerical_mismatch")
        exact = self.check("fp32", "pass")["metrics"]
        self.assertEqual(exact["max_rel_error"], 0.0, exact)

    def test_a_near_constant_reference_is_judged_with_varied_inputs(self):
        # An output that varies by 1e-6 of its magnitude still carries information
        # (compare.OutputInformation): the base trials judge it, no varied inputs needed.
        honest = self.check("tiny-honest", "pass")
        self.assertNotIn("inputs_varied", honest["flags"], honest)
        self.assertLess(honest["metrics"]["centered_rel_error"], 1e-6, honest)
        self.check("tiny-reference", "pass")
        self.check("tiny-default", "pass")
        # Within the per-element tolerance of its own inputs, but none of the output's
        # variation: the variation check, which every rule makes, rejects it on trial 1.
        zeros = self.check("tiny-zeros", "fail", "numerical_mismatch",
                           "trial 1: the output does not reproduce how the reference's output varies")
        self.assertGreater(zeros["metrics"]["centered_rel_error"], 0.99, zeros)

    def test_an_output_without_information_is_judged_on_inputs_that_give_it_some(self):
        honest = self.check("dead-relu", "pass")
        self.assertIn("inputs_varied", honest["flags"], honest)
        self.assertGreater(honest["metrics"]["trials"], 2, honest)
        self.check("dead-relu-zeros", "fail", "numerical_mismatch")

    def test_an_output_no_input_makes_vary_is_a_task_error(self):
        # (x - mean(x)).mean() is rounding noise whatever x is scaled or shifted by, and
        # whatever the weights are drawn as.
        for case in ("unvariable", "unvariable-reference"):
            self.check(case, "error", "task_error", f"at up to {WEIGHT_DRAWS} draws of the weights")

    def test_an_output_that_some_weights_leave_constant_is_judged_at_weights_that_do_not(self):
        # The first draw shuts the gate (zeros at every input), the second opens it: the
        # task is judged there, the flag says so, and a constant fails.
        redrawn = self.check("gated-redrawn", "pass")
        self.assertIn("weights_redrawn", redrawn["flags"], redrawn)
        self.check("gated-redrawn-zeros", "fail", "numerical_mismatch")
        self.assertNotIn("weights_redrawn", self.check("gated-open", "pass")["flags"])
        # Shut at every draw: no information at all, a task_error that says so.
        self.check("gated-never", "error", "task_error", f"at up to {WEIGHT_DRAWS} draws of the weights")


if __name__ == "__main__":
    unittest.main()


if __name__ == "__main__":
    unittest.main()
