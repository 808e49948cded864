"""Weights by construction (issue 19 item 7): Model and ModelNew built under the same
secret seed with drawn defaults agree, so what a ModelNew precomputes in its constructor
holds, while a candidate that ignores a weight (assumes a LayerNorm's ones) fails."""

import json
import unittest

import torch

from kforge_harness.tasks import runner
from tests import client


def req(request_id, task, candidate=None):
    return client.request(request_id, "run", task, candidate and f"correct/{candidate}",
                          language="python")


class WeightsThroughTheServerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = client.Server(max_children=2)
        cls.responses = cls.server.ask(
            req("ignores", "layernorm", "layernorm_ignores_weights"),
            req("honest", "layernorm", "layernorm_honest"),
            req("renamed", "layernorm", "layernorm_renamed"),
            req("reference", "layernorm"),
            req("assumes-defaults", "layernorm", "layernorm_default_assumed"),
            req("precomputed", "linear", "linear_precomputed"),
            client.request("linear", "run", "linear", "linear_cpp"),
            timeout=900)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def check(self, case, status, error_class=""):
        response = self.responses[case]
        detail = json.dumps(response, indent=1)[:3000]
        self.assertEqual(response["status"], status, detail)
        self.assertEqual(response["error_class"], error_class, detail)
        return response

    def test_a_candidate_that_ignores_weight_and_bias_fails(self):
        self.check("ignores", "fail", "numerical_mismatch")
        self.check("assumes-defaults", "fail", "numerical_mismatch")

    def test_what_a_modelnew_precomputes_in_its_constructor_holds(self):
        response = self.check("precomputed", "pass")
        self.assertNotIn("weights_not_copied", response["flags"])

    def test_honest_candidates_get_the_same_weights(self):
        for case in ("honest", "reference", "linear"):
            response = self.check(case, "pass")
            self.assertNotIn("weights_not_copied", response["flags"], case)

    def test_differently_named_weights_are_matched_by_shape_order(self):
        response = self.check("renamed", "pass")
        self.assertIn("weights_not_copied", response["flags"])  # its 3x3 scratch parameter
        self.assertIn("'scratch'", response["log_tail"])


class DrawnDefaultsTest(unittest.TestCase):
    """Both models are built right after seeding with the model seed, with the constants
    of initialisers drawn from it (runner.drawn_defaults): the same structure gets the
    same weights, and no weight is left at a constant a kernel could assume."""

    @staticmethod
    def build(seed=7):
        runner.seed_everything(seed)
        with runner.drawn_defaults():
            return torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.LayerNorm(4),
                                       torch.nn.BatchNorm1d(4), torch.nn.PReLU())

    def test_no_default_constant_survives_and_the_scale_is_kept(self):
        model = self.build()
        ln, bn, prelu = model[1], model[2], model[3]
        for tensor, low, high in ((ln.weight, 0.5, 1.5), (ln.bias, -0.5, 0.5),
                                  (bn.running_var, 0.5, 1.5), (bn.running_mean, -0.5, 0.5),
                                  (prelu.weight, 0.125, 0.375)):
            self.assertTrue(bool((tensor >= low).all() and (tensor <= high).all()), tensor)
            self.assertGreater(float(tensor.std()) if tensor.numel() > 1 else 1.0, 0.0)
        self.assertFalse(torch.equal(ln.weight, torch.ones(4)))

    def test_the_same_seed_gives_the_same_weights_and_another_seed_others(self):
        first, second, other = self.build(7), self.build(7), self.build(8)
        for (name, a), (_, b), (_, c) in zip(runner.weight_tensors(first), runner.weight_tensors(second),
                                             runner.weight_tensors(other)):
            self.assertTrue(torch.equal(a, b), name)
            if not name.startswith("3."):  # torch 1.13's PReLU fills its 0.25 itself (fill_)
                self.assertFalse(torch.equal(a, c), name)

    def test_the_initialisers_are_themselves_again_afterwards(self):
        self.build()
        layer = torch.nn.LayerNorm(4)
        self.assertTrue(torch.equal(layer.weight, torch.ones(4)))

    def test_load_copies_only_what_differs_names_then_shapes_in_order(self):
        source = self.build(3)
        same = self.build(3)
        matched, copied, not_copied, unused = runner.load_weights(same, runner.weight_tensors(source))
        self.assertEqual((copied, not_copied, unused), (0, [], []))
        self.assertEqual(matched, len(runner.weight_tensors(source)))
        other = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.LayerNorm(4))
        other.add_module("scratch", torch.nn.Linear(3, 3))
        matched, copied, not_copied, unused = runner.load_weights(other, runner.weight_tensors(source))
        self.assertEqual(copied, 4)  # the linear's and the norm's weight and bias
        self.assertEqual(not_copied, ["scratch.weight", "scratch.bias"])
        self.assertIn("2.running_mean", unused)
        for (_, a), (_, b) in zip(runner.weight_tensors(other)[:4], runner.weight_tensors(source)[:4]):
            self.assertTrue(torch.equal(a, b))


if __name__ == "__main__":
    unittest.main()
