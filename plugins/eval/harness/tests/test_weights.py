"""Weights a candidate cannot predict: the reference's parameters re-initialised from
the request's seed and handed to ModelNew, so ignoring a weight fails."""

import copy
import json
import unittest

import torch

from kforge_harness.tasks import runner
from kforge_harness.judge.outputs import FileLeaf, write_leaves
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

    def test_honest_candidates_get_the_same_weights(self):
        for case in ("honest", "reference", "linear"):
            response = self.check(case, "pass")
            self.assertNotIn("weights_not_copied", response["flags"], case)

    def test_differently_named_weights_are_matched_by_shape_order(self):
        response = self.check("renamed", "pass")
        self.assertIn("weights_not_copied", response["flags"])  # its 3x3 scratch parameter
        self.assertIn("'scratch'", response["log_tail"])


class ReinitialiseTest(unittest.TestCase):
    def model(self):
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.LayerNorm(4),
                                   torch.nn.BatchNorm1d(4))

    def test_no_default_value_survives_and_the_scale_is_kept(self):
        default, fresh = self.model(), self.model()
        names = [name for name, _ in runner.reinitialise(fresh, 7)]
        self.assertIn("2.running_var", names)
        for (name, old), (_, new) in zip(runner.weight_tensors(default), runner.weight_tensors(fresh)):
            self.assertFalse(torch.equal(old, new), name)
            bound = max(float(old.abs().max()) * 1.5, 0.5)
            self.assertLessEqual(float(new.abs().max()), bound, name)
        self.assertGreater(float(fresh[2].running_var.min()), 0.0)
        weight = fresh[0].weight
        self.assertLessEqual(float(weight.abs().max()), 1.5 / 8 ** 0.5)  # kaiming bound x1.5

    def test_a_large_tensor_is_reordered_in_blocks(self):
        # Past _REORDER_BLOCKS elements whole blocks move (a memory copy, not a gather),
        # and the factors are drawn in pieces on threads: still no default value
        # survives, the scale is kept, and the seed alone decides.
        self.addCleanup(setattr, runner, "_REORDER_BLOCKS", runner._REORDER_BLOCKS)
        self.addCleanup(setattr, runner, "_FACTOR_PIECE", runner._FACTOR_PIECE)
        runner._REORDER_BLOCKS, runner._FACTOR_PIECE = 4, 8
        torch.manual_seed(0)
        default = torch.nn.Linear(9, 8)  # 72 weights: 4 blocks of 18; 8 biases: 4 of 2
        first, second = copy.deepcopy(default), copy.deepcopy(default)
        runner.reinitialise(first, 11)
        runner.reinitialise(second, 11)
        for (name, old), (_, new), (_, again) in zip(runner.weight_tensors(default), runner.weight_tensors(first),
                                                     runner.weight_tensors(second)):
            self.assertTrue(torch.equal(new, again), name)
            self.assertFalse(bool((old == new).any()), name)
            self.assertLessEqual(float(new.abs().max()), float(old.abs().max()) * 1.5, name)

    def test_the_same_seed_gives_the_same_weights(self):
        first, second, other = self.model(), self.model(), self.model()
        runner.reinitialise(first, 7)
        runner.reinitialise(second, 7)
        runner.reinitialise(other, 8)
        for (_, a), (_, b), (_, c) in zip(runner.weight_tensors(first), runner.weight_tensors(second),
                                          runner.weight_tensors(other)):
            self.assertTrue(torch.equal(a, b))
            self.assertFalse(torch.equal(a, c))

    def test_load_matches_names_then_shapes_in_order(self):
        import tempfile
        source = self.model()
        runner.reinitialise(source, 3)
        found = runner.weight_tensors(source)
        with tempfile.TemporaryDirectory() as directory:
            infos = write_leaves([t for _, t in found], directory, "w")
            leaves = [(name, FileLeaf(directory, "w", i, info)) for i, ((name, _), info)
                      in enumerate(zip(found, infos))]
            target = torch.nn.Module()
            target.w = torch.nn.Parameter(torch.zeros(4, 8))
            target.extra = torch.nn.Parameter(torch.zeros(5))
            copied, not_copied, unused = runner.load_weights(target, leaves)
        self.assertTrue(torch.equal(target.w, source[0].weight))
        self.assertEqual(copied, 1)
        self.assertEqual(not_copied, ["extra"])
        self.assertIn("0.bias", unused)


if __name__ == "__main__":
    unittest.main()
