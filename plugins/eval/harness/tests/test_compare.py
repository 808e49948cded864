"""Comparison rules, the near-constant detector and the dynamic anti-cheat helpers."""

import math
import unittest

import numpy as np
import torch

from kforge_harness import anticheat, protocol
from kforge_harness.compare import ConstantDetector, compare_outputs, compare_tensors
from kforge_harness.protocol import normalise_request

ALLCLOSE = normalise_request({"id": 1, "action": "check", "candidate": {"code": ""}})[
    "options"]["rule"]


def rule(kind, **fields):
    return normalise_request({"id": 1, "action": "check", "candidate": {"code": ""},
                              "options": {"rule": {"kind": kind, **fields}}})["options"]["rule"]


class CompareTest(unittest.TestCase):
    def test_default_tolerances_per_dtype(self):
        ref = torch.ones(100)
        self.assertTrue(compare_tensors(ref, ref + 1e-5, ALLCLOSE).passed)
        self.assertFalse(compare_tensors(ref, ref + 1e-3, ALLCLOSE).passed)
        half = torch.ones(100, dtype=torch.float16)
        self.assertTrue(compare_tensors(half, half + 0.009, ALLCLOSE).passed)
        ints = torch.arange(10)
        self.assertFalse(compare_tensors(ints, ints + 1, ALLCLOSE).passed)

    def test_mismatch_reports_max_and_mean_abs_diff(self):
        ref = torch.zeros(4)
        outcome = compare_tensors(ref, torch.tensor([0.0, 0.0, 0.0, 0.5]), ALLCLOSE)
        self.assertEqual(outcome.error_class, protocol.NUMERICAL_MISMATCH)
        self.assertAlmostEqual(outcome.max_abs_diff, 0.5)
        self.assertAlmostEqual(outcome.mean_abs_diff, 0.125)
        self.assertIn("1 of 4 elements", outcome.message)

    def test_nan_never_passes(self):
        ref = torch.ones(3)
        cand = torch.tensor([1.0, math.nan, 1.0])
        for kind in (ALLCLOSE, rule("max_abs_diff", limit=1e9),
                     rule("share_over_limit", max_share=1.0)):
            outcome = compare_tensors(ref, cand, kind)
            self.assertEqual(outcome.error_class, protocol.NUMERICAL_MISMATCH, kind)
            self.assertIn("NaN", outcome.message)
        both = compare_tensors(cand, cand.clone(), ALLCLOSE)
        self.assertFalse(both.passed)
        self.assertIn("reference", both.message)

    def test_equal_infinities_match(self):
        ref = torch.tensor([math.inf, -math.inf, 1.0])
        self.assertTrue(compare_tensors(ref, ref.clone(), ALLCLOSE).passed)
        self.assertFalse(compare_tensors(ref, ref.flip(0), ALLCLOSE).passed)

    def test_shape_and_dtype(self):
        ref = torch.zeros(2, 3)
        self.assertEqual(compare_tensors(ref, torch.zeros(3, 2), ALLCLOSE).error_class,
                         protocol.SHAPE_MISMATCH)
        self.assertEqual(compare_tensors(ref, ref.half(), ALLCLOSE).error_class,
                         protocol.DTYPE_MISMATCH)
        self.assertEqual(compare_outputs([ref, ref], [ref], ALLCLOSE).error_class,
                         protocol.SHAPE_MISMATCH)
        self.assertEqual(compare_outputs([ref], [[0.0] * 3] * 2, ALLCLOSE).error_class,
                         protocol.SHAPE_MISMATCH)

    def test_max_abs_diff_preset(self):
        preset = rule("max_abs_diff", limit=1e-3)
        ref = torch.zeros(10)
        self.assertTrue(compare_tensors(ref, ref + 9e-4, preset).passed)
        self.assertFalse(compare_tensors(ref, ref + 1e-3, preset).passed)

    def test_share_over_limit(self):
        akg = rule("share_over_limit", rtol=1e-2, max_share=0.1)
        ref = torch.ones(100)
        cand = ref.clone()
        cand[:10] += 1.0
        self.assertTrue(compare_tensors(ref, cand, akg).passed)
        cand[10] += 1.0
        self.assertIn("11.00%", compare_tensors(ref, cand, akg).message)

    def test_numpy_reference_outputs_compare_as_tensors(self):
        ref = np.linspace(-1, 1, 10, dtype=np.float32)
        self.assertTrue(compare_outputs([ref], [torch.from_numpy(ref.copy())], ALLCLOSE).passed)
        self.assertEqual(compare_outputs([ref], [torch.from_numpy(ref).double()],
                                         ALLCLOSE).error_class, protocol.DTYPE_MISMATCH)


class ConstantDetectorTest(unittest.TestCase):
    def test_near_zero_output_is_constant(self):
        detector = ConstantDetector(ALLCLOSE)
        for _ in range(3):
            detector.observe([torch.randn(64) * 1e-8])
        self.assertAlmostEqual(detector.constant(), 0.0, places=6)

    def test_varied_output_is_not(self):
        detector = ConstantDetector(ALLCLOSE)
        detector.observe([torch.randn(64)])
        self.assertIsNone(detector.constant())

    def test_only_outputs_with_many_elements_count_as_elementwise(self):
        detector = ConstantDetector(ALLCLOSE)
        detector.observe([torch.tensor(0.5)])
        detector.observe([torch.tensor(0.5 + 1e-6)])
        self.assertIsNotNone(detector.constant())
        self.assertFalse(detector.elementwise)
        detector.observe([torch.full((4,), 0.5)])
        self.assertTrue(detector.elementwise)

    def test_scalar_outputs_that_vary_across_trials_are_not(self):
        # A loss returns one number per trial: constant within a trial, not across.
        detector = ConstantDetector(ALLCLOSE)
        detector.observe([torch.tensor(0.7)])
        self.assertIsNotNone(detector.constant())
        detector.observe([torch.tensor(1.3)])
        self.assertIsNone(detector.constant())

    def test_one_varied_output_is_enough(self):
        detector = ConstantDetector(ALLCLOSE)
        detector.observe([torch.zeros(8), torch.randn(8)])
        self.assertIsNone(detector.constant())


class AntiCheatHelpersTest(unittest.TestCase):
    def test_aliasing(self):
        x = torch.randn(4, 4)
        self.assertEqual(anticheat.aliasing([x.view(-1)], [x]), (0, 0))
        self.assertEqual(anticheat.aliasing([x[2:]], [torch.randn(2), x]), (0, 1))
        self.assertIsNone(anticheat.aliasing([x.clone()], [x]))

    def test_changed_inputs(self):
        x, y = torch.randn(3), torch.tensor([math.nan, 1.0])
        self.assertEqual(anticheat.changed_inputs([x, y], [x.clone(), y.clone()]), [])
        moved = x.clone()
        moved[0] += 1
        self.assertEqual(anticheat.changed_inputs([x, y], [moved, y.clone()]), [0])

    def test_poison_allocator_runs(self):
        anticheat.poison_allocator([torch.zeros(16), torch.zeros(3, dtype=torch.int64)])


if __name__ == "__main__":
    unittest.main()
