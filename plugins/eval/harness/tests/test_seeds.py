"""Inputs a candidate cannot predict: every seed derives from the request's secret seed
and the task id; the same secret reproduces a run, another one changes the inputs."""

import json
import re
import unittest

from kforge_harness.server import seeds
from tests import client


def digest_run(request_id, seed):
    return client.request(request_id, "run", "relu", "correct/input_digest_relu",
                          language="python", options={"seed": seed})


class SeedsThroughTheServerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = client.Server(max_children=2)
        secret = 0x9E3779B97F4A7C15  # a 64-bit run seed as the engine draws them
        cls.responses = cls.server.ask(
            # KernelBench's public seeding would hand it seeds 43 and 44.
            client.request("table", "run", "relu", "correct/seed_table_relu", language="python",
                           options={"seed": 42}),
            digest_run("first", secret), digest_run("again", secret),
            digest_run("other", secret + 1), timeout=900)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def digests(self, case):
        response = self.responses[case]
        self.assertEqual(response["status"], "pass", json.dumps(response)[:2000])
        return re.findall(r"input-digest \S+ \S+", response["log_tail"])

    def test_a_table_of_answers_for_public_seeds_fails(self):
        response = self.responses["table"]
        self.assertEqual(response["status"], "fail", json.dumps(response)[:2000])
        self.assertEqual(response["error_class"], "numerical_mismatch")

    def test_the_same_secret_reproduces_the_inputs_and_another_changes_them(self):
        first, again, other = self.digests("first"), self.digests("again"), self.digests("other")
        self.assertEqual(len(first), 2)
        self.assertEqual(first, again)
        self.assertTrue(set(first).isdisjoint(other), (first, other))


class DerivationTest(unittest.TestCase):
    def test_seeds_depend_on_secret_task_and_trial(self):
        a, b = seeds.RequestSeeds(1, "relu"), seeds.RequestSeeds(2, "relu")
        self.assertNotEqual(a.inputs(3), b.inputs(3))
        self.assertNotEqual(a.inputs(2), seeds.RequestSeeds(1, "gelu").inputs(2))
        self.assertEqual(len(set(a.inputs(5) + [a.model])), 6)
        self.assertEqual(a.inputs(2), seeds.RequestSeeds(1, "relu").inputs(2))
        self.assertTrue(all(0 <= s < 2**63 for s in a.inputs(50)))
        self.assertNotIn(43, seeds.RequestSeeds(42, "relu").inputs(5))


if __name__ == "__main__":
    unittest.main()


class SeedEverythingTest(unittest.TestCase):
    """runner.seed_everything seeds what torch.manual_seed does (less the backends absent
    here): inputs and weights made after it are KernelBench's own."""

    def test_the_same_draws_as_torch_manual_seed(self):
        import random

        import numpy as np
        import torch

        from kforge_harness.tasks.runner import seed_everything

        for seed in (0, 12345, 2**40 + 7, 2**63 + 5):
            torch.manual_seed(seed)
            random.seed(seed)
            np.random.seed(seed % 2**32)
            expected = (torch.randn(8), random.random(), np.random.rand())
            torch.manual_seed(seed + 1)  # whatever came before
            seed_everything(seed)
            got = (torch.randn(8), random.random(), np.random.rand())
            self.assertTrue(torch.equal(expected[0], got[0]), seed)
            self.assertEqual(expected[1:], got[1:])
