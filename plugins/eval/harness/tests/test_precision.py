"""What the default rule passes and rejects, class by class (issue 19, items 4 and 8):
downcasts to bfloat16/float16 at small and large magnitudes, results computed on a
sample, honest float32 kernels that sum in other orders over long reductions; the
variation check (constants and flattened outputs), and the reference side's test of
whether an output carries information at all. README.md, "Comparison rules", has the
measured numbers these tests stand for (bench/precision_reach.py)."""

import unittest

import numpy as np
import torch

from kforge_harness import protocol
from kforge_harness.judge import compare
from kforge_harness.judge.outputs import TensorLeaf
from kforge_harness.judge.compare import OutputInformation, compare_tensors
from kforge_harness.protocol import normalise_request



def normalised(rule=None):
    options = {"rule": rule} if rule else {}
    return normalise_request({"id": 1, "action": "check", "candidate": {"code": ""},
                              "options": options})["options"]["rule"]


DEFAULT = normalised()
# Per element as loose as KernelBench's own rule (1e-2), with the default rule's
# whole-output checks: what those checks catch on their own.
WHOLE = normalised({"kind": "allclose", "atol": 1e-2, "rtol": 1e-2,
                    "max_rel_l2": DEFAULT["max_rel_l2"]})
F32 = np.float32


def generator(seed):
    return torch.Generator().manual_seed(seed)


def sequential(values):
    """Row sums added one element after the other, in float32."""
    return torch.from_numpy(np.add.accumulate(values.numpy(), axis=1, dtype=F32)[:, -1].copy())


def blocked(values, block=256):
    """A GPU kernel's order: tiles of `block` summed sequentially, then the tiles."""
    rows = values.shape[0]
    tiles = np.add.accumulate(values.numpy().reshape(rows, -1, block), axis=2, dtype=F32)[:, :, -1]
    return sequential(torch.from_numpy(tiles.copy()))


def tree(values):
    """A binary tree of float32 additions (a power-of-two length)."""
    while values.shape[1] > 1:
        values = values[:, 0::2] + values[:, 1::2]
    return values[:, 0].contiguous()


def judged(ref, cand, facts=None, rule=None):
    return compare_tensors(ref, cand, rule or DEFAULT, facts=facts)


VARIES = "does not reproduce how the reference's output varies"


class DowncastTest(unittest.TestCase):
    """A float32 output computed or stored in bfloat16 fails at every magnitude: the
    whole output's relative error does not depend on it, unlike an absolute tolerance
    (which let a softmax over 65,536 columns, values ~1.5e-5, pass in bfloat16)."""

    def test_softmax_over_65536_columns_in_bf16_fails(self):
        x = torch.randn(4, 65536, generator=generator(0))
        ref = torch.softmax(x, dim=1)
        self.assertLess(float(ref.max()), 1e-3)  # every value far below atol=1e-4's reach
        for cand in (ref.bfloat16().float(), torch.softmax(x.bfloat16(), dim=1).float()):
            outcome = judged(ref, cand)
            self.assertEqual(outcome.error_class, protocol.NUMERICAL_MISMATCH)
            self.assertIn("off as a whole", outcome.message)
            self.assertIn("bfloat16", outcome.message)
            self.assertGreater(outcome.metrics["rel_l2_error"], 1e-3)
        self.assertTrue(judged(ref, torch.exp(x) / torch.exp(x).sum(dim=1, keepdim=True)).passed)

    def test_bf16_fails_at_every_magnitude(self):
        x = torch.randn(64, 1024, generator=generator(1))
        for scale in (1e-30, 1e-8, 1e-5, 1.0, 1e4, 1e30):
            ref = x * scale
            outcome = judged(ref, ref.bfloat16().float())
            self.assertFalse(outcome.passed, scale)
            self.assertGreater(outcome.metrics["rel_l2_error"], 1.1e-3, scale)
            self.assertTrue(judged(ref, ref.clone()).passed, scale)

    def test_bf16_inputs_of_a_float32_matmul_fail(self):
        # What a tensor-core kernel on bfloat16 operands computes, accumulating in float32.
        a = torch.randn(32, 4096, generator=generator(2))
        b = torch.randn(4096, 32, generator=generator(3)) / 64
        ref = a @ b
        cand = a.bfloat16().float() @ b.bfloat16().float()
        self.assertFalse(judged(ref, cand).passed)
        self.assertIn("off as a whole", judged(ref, cand, rule=WHOLE).message)

    def test_fp16_fails_per_element_at_order_one_and_as_a_whole_in_its_subnormals(self):
        # Rounding to float16 is 2e-4 of the output, within max_rel_l2 (5e-4): at order
        # one the per-element rtol (1e-4) rejects it, between ~6e-5 and ~0.5 per element
        # atol covers it and it passes, and below float16's normal range (6.1e-5) its
        # subnormals lose digits and it fails as a whole.
        x = torch.randn(64, 1024, generator=generator(4))
        self.assertIn("elements differ beyond", judged(x, x.half().float()).message)
        self.assertTrue(judged(x * 1e-2, (x * 1e-2).half().float()).passed)
        self.assertIn("off as a whole", judged(x * 1e-6, (x * 1e-6).half().float()).message)

    def test_a_result_wrong_by_1e3_relative_fails_at_any_magnitude(self):
        x = torch.rand(64, 1024, generator=generator(5)) + 0.5
        for scale in (1e-6, 1.0, 1e6):
            ref = x * scale
            self.assertFalse(judged(ref, ref * (1 + 1e-3)).passed, scale)
            self.assertTrue(judged(ref, ref * (1 + 1e-5)).passed, scale)


class SampledResultTest(unittest.TestCase):
    """A reduction computed on part of its input: its error is of the order of how much
    the result varies between inputs, which the variation check measures."""

    def test_a_loss_on_half_of_its_elements_fails(self):
        g = generator(6)
        a, b = torch.randn(1 << 20, generator=g), torch.randn(1 << 20, generator=g)
        squares = (a - b) ** 2
        ref = squares.mean()
        self.assertFalse(judged(ref, squares[: 1 << 19].mean()).passed)
        self.assertIn("off as a whole", judged(ref, squares[: 1 << 19].mean(), rule=WHOLE).message)

    def test_a_large_loss_on_a_sample_fails_on_its_variation_across_trials(self):
        # Over 4M elements half of them give the loss to 2e-4, within max_rel_l2; across
        # trials the loss varies by as much, and the judge measures the error against
        # that variation about the reference's centre over its trials (OutputInformation).
        trials, sampled = [], []
        for seed in range(5):
            g = generator(100 + seed)
            squares = (torch.randn(1 << 22, generator=g) - torch.randn(1 << 22, generator=g)) ** 2
            trials.append(squares.mean())
            sampled.append(squares[: 1 << 21].mean())
        information = OutputInformation(DEFAULT)
        for ref in trials:
            information.observe([ref])
        self.assertEqual(information.informative(), [True])
        facts = information.facts()[0]
        verdicts = [judged(ref, cand, facts, WHOLE) for ref, cand in zip(trials, sampled)]
        self.assertTrue(any(VARIES in v.message for v in verdicts), [v.metrics for v in verdicts])
        for ref in trials:
            self.assertTrue(judged(ref, ref.double().float(), facts).passed)

    def test_row_means_on_a_sample_of_each_row_fail(self):
        # Means of 5 + 0.1 N(0,1): a half-sample is off by 2e-4 of the output, within
        # max_rel_l2, and by as much as the means vary.
        x = torch.randn(256, 16384, generator=generator(7)) * 0.1 + 5
        self.assertFalse(judged(x.mean(dim=1), x[:, :8192].mean(dim=1)).passed)
        outcome = judged(x.mean(dim=1), x[:, :8192].mean(dim=1), rule=WHOLE)
        self.assertIn(VARIES, outcome.message)
        self.assertGreater(outcome.metrics["centered_rel_error"], 0.5)


class HonestLongReductionTest(unittest.TestCase):
    """Honest float32 kernels pass with margin: reductions over up to 1M elements summed
    sequentially, in GPU-style tiles or as a tree, against torch's own float32 result."""

    def assert_honest(self, ref, cand, label):
        outcome = judged(ref, cand)
        self.assertTrue(outcome.passed, f"{label}: {outcome.message}")
        return outcome.metrics

    def test_sums_in_every_order(self):
        for name, draw in (("N(0,1)", torch.randn), ("U(0,1)", torch.rand)):
            x = draw(4, 1 << 20, generator=generator(8))
            ref = x.sum(dim=1)
            for order in (sequential, blocked, tree):
                metrics = self.assert_honest(ref, order(x), f"{name} {order.__name__}")
                self.assertLess(metrics["rel_l2_error"], 5e-5)

    def test_dot_products_over_1m_positive_values(self):
        # The hardest measured case: torch's CPU dot is sequential, and any other order
        # differs from it by 1.5e-4 of an output that varies by only 8e-4 of itself.
        a = torch.rand(8, 1 << 20, generator=generator(9))
        b = torch.rand(8, 1 << 20, generator=generator(10))
        ref = torch.matmul(a.unsqueeze(1), b.unsqueeze(2)).view(-1)
        for order in (blocked, tree):
            metrics = self.assert_honest(ref, order(a * b), order.__name__)
            self.assertLess(metrics["rel_l2_error"], 2.5e-4)

    def test_online_softmax_and_blocked_welford(self):
        x = torch.randn(4, 65536, generator=generator(11)) * 3 + 1
        tiles = x.view(4, -1, 1024)
        running_max, running_sum = torch.full((4,), -float("inf")), torch.zeros(4)
        count, mean, m2 = torch.zeros(4), torch.zeros(4), torch.zeros(4)
        for index in range(tiles.shape[1]):
            tile = tiles[:, index]
            new_max = torch.maximum(running_max, tile.max(dim=1).values)
            running_sum = (running_sum * torch.exp(running_max - new_max)
                           + torch.exp(tile - new_max[:, None]).sum(dim=1))
            running_max = new_max
            tile_mean = tile.mean(dim=1)
            total = count + 1024
            delta = tile_mean - mean
            mean = mean + delta * (1024 / total)
            m2 = m2 + ((tile - tile_mean[:, None]) ** 2).sum(dim=1) + delta * delta * count * 1024 / total
            count = total
        self.assert_honest(torch.softmax(x, dim=1),
                           torch.exp(x - running_max[:, None]) / running_sum[:, None], "softmax")
        self.assert_honest(torch.layer_norm(x, (65536,)),
                           (x - mean[:, None]) / torch.sqrt(m2 / 65536 + 1e-5)[:, None], "welford")


class VariationCheckTest(unittest.TestCase):
    """Every rule judges the part of the output that varies: a constant fails wherever
    the output varies beyond what its dtype carries, however close it is relative to
    the output's magnitude."""

    def test_a_constant_fails_a_near_constant_output(self):
        x = torch.randn(64, 1024, generator=generator(12))
        ref = 1 + 2e-4 * x  # varies by 2e-4 of itself: a constant is within max_rel_l2
        constant = torch.full_like(ref, float(ref.mean()))
        self.assertFalse(judged(ref, constant).passed)
        outcome = judged(ref, constant, rule=WHOLE)
        self.assertLess(outcome.metrics["rel_l2_error"], 5e-4)
        self.assertIn(VARIES, outcome.message)
        self.assertAlmostEqual(outcome.metrics["centered_rel_error"], 1.0, places=3)
        # bfloat16 rounds it to a few values: as bad as a constant.
        self.assertIn(VARIES, judged(ref, ref.bfloat16().float(), rule=WHOLE).message)
        honest = judged(ref, (1 + 2e-4 * x.double()).float())
        self.assertTrue(honest.passed, honest.message)
        self.assertLess(honest.metrics["centered_rel_error"], 1e-2)

    def test_a_flattened_output_fails_every_rule(self):
        x = torch.randn(64, 1024, generator=generator(13))
        ref = 1 + 1e-3 * x
        flattened = ref.mean() + 0.5 * (ref - ref.mean())
        self.assertFalse(judged(ref, flattened).passed)
        # KernelBench's own rule as a request gives it: normalisation adds the check.
        kernelbench = normalised({"kind": "allclose", "atol": 1e-2, "rtol": 1e-2})
        self.assertIn(VARIES, judged(ref, flattened, rule=kernelbench).message)
        self.assertTrue(judged(ref, ref + 1e-4 * x, rule=kernelbench).passed)

    def test_tiny_outputs_are_relative_too(self):
        ref = torch.randn(16, 256, generator=generator(14)) * 1e-6
        self.assertFalse(judged(ref, torch.zeros_like(ref)).passed)
        self.assertTrue(judged(ref, ref.clone()).passed)

    def test_an_output_that_does_not_vary_is_judged_by_the_rest_of_the_rule(self):
        ref = torch.ones(1000)
        outcome = judged(ref, ref + 5e-5)
        self.assertTrue(outcome.passed, outcome.message)
        self.assertNotIn("centered_rel_error", outcome.metrics)  # the check did not judge
        self.assertTrue(judged(torch.zeros(10), torch.full((10,), 1e-5)).passed)  # no magnitude

    def test_a_scalar_constant_fails_across_trials(self):
        # A loss over many elements hardly moves between trials: a constant is within the
        # per-element and the whole-output tolerance of every trial.
        losses = [torch.tensor(0.5 + 2e-5 * k) for k in range(5)]
        information = OutputInformation(DEFAULT)
        for loss in losses:
            information.observe([loss])
        facts = information.facts()[0]
        self.assertAlmostEqual(facts["centre"], 0.50004, places=7)
        constant = torch.tensor(0.50004)
        self.assertTrue(any(not judged(loss, constant, facts).passed for loss in losses))
        self.assertTrue(all(judged(loss, loss.clone(), facts).passed for loss in losses))
        # Without the centre a scalar has no variation of its own: only max_rel_l2 judges.
        self.assertTrue(all(judged(loss, constant).passed for loss in losses))


class LeafFactsTest(unittest.TestCase):
    """compare_leaves takes each leaf's facts from a description that may hold other keys
    (the task host's per-leaf record): what the reference side measured reaches the
    comparison of that leaf."""

    def test_a_centre_in_the_leaf_facts_judges_a_scalar_across_trials(self):
        reference, candidate = [TensorLeaf(torch.tensor(0.5))], [TensorLeaf(torch.tensor(0.50004))]
        passed = compare.compare_leaves(reference, candidate, DEFAULT)
        self.assertTrue(passed.passed, passed.message)  # within 8e-5 of 0.5
        failed = compare.compare_leaves(reference, candidate, DEFAULT,
                                        facts=[{"centre": 0.50004, "dtype": "float32"}])
        self.assertEqual(failed.error_class, protocol.NUMERICAL_MISMATCH, failed.message)
        self.assertIn(VARIES, failed.message)


class NoiseFloorTest(unittest.TestCase):
    """An output made of cancellations is only as precise as the reference's own rounding
    noise: measured by the reference side, it sets the bounds' floor."""

    def test_a_partly_cancelled_output_passes_an_honest_kernel_with_the_noise_measured(self):
        x = 1e4 + torch.randn(64, 1024, generator=generator(15))
        forward = lambda t: t - t.mean(dim=1, keepdim=True)
        ref = forward(x)
        honest = (x.double() - x.double().mean(dim=1, keepdim=True)).float()
        # The float32 reference is itself off by an ulp of 1e4 (1e-3) per element: the
        # per-element atol of the default rule rejects every exact kernel (it has no
        # noise floor); the whole-output bound alone does too, until the noise is known.
        self.assertFalse(judged(ref, honest).passed)
        self.assertIn("off as a whole", judged(ref, honest, rule=WHOLE).message)
        information = OutputInformation(WHOLE)
        noise = information.observe([ref], [forward(compare.perturbed(x, 1))])
        self.assertEqual(information.informative(), [True])
        facts = {"noise": noise[0], **information.facts()[0]}
        outcome = judged(ref, honest, facts, WHOLE)
        self.assertTrue(outcome.passed, outcome.message)
        self.assertFalse(judged(ref, ref * 1.05, facts, WHOLE).passed)


class OutputInformationTest(unittest.TestCase):
    """The reference side's test: only an output with no information is a task_error,
    and the answer does not depend on the seed."""

    def information(self, trials, perturbed=None, rule=None):
        information = OutputInformation(rule or DEFAULT)
        for index, outputs in enumerate(trials):
            information.observe(outputs, perturbed[index] if perturbed else None)
        return information

    def test_an_exactly_constant_output_carries_none(self):
        # KernelBench level 2 task 58 at weights that clamp every element to 1.
        information = self.information([[torch.ones(8, 16)] for _ in range(3)])
        self.assertEqual(information.informative(), [False])
        self.assertIn("carries no information", information.uninformative())
        ints = self.information([[torch.zeros(5, dtype=torch.int64)]] * 2)
        self.assertIsNotNone(ints.uninformative())
        self.assertIsNone(self.information([[torch.arange(5)]]).uninformative())

    def test_a_few_varying_elements_are_information_whatever_the_seed(self):
        for seed in range(5):
            x = torch.randn(64, 64, generator=generator(seed))
            out = torch.clamp(x * 10 + 30, max=1.0)  # ~0.1% of the elements below 1
            self.assertLess(float((out < 1).float().mean()), 0.01)
            self.assertIsNone(self.information([[out]]).uninformative(), seed)

    def test_rounding_noise_carries_none_once_measured(self):
        # (x - mean(x)).mean(): 1e-9 whatever x, moved as much by an ulp of its inputs.
        forward = lambda t: (t - t.mean(dim=1, keepdim=True)).mean(dim=1)
        inputs = [torch.randn(32, 128, generator=generator(seed)) for seed in range(3)]
        noise = self.information([[forward(x)] for x in inputs],
                                 [[forward(compare.perturbed(x, 7))] for x in inputs])
        self.assertIn("rounding noise", noise.uninformative())
        # Unmeasured, noise of 1e-9 looks like any other small output: the reference side
        # has to measure it.
        self.assertIsNone(self.information([[forward(x)] for x in inputs]).uninformative())

    def test_small_and_scalar_outputs_carry_information(self):
        inputs = [torch.randn(16, 256, generator=generator(seed)) for seed in range(3)]
        self.assertIsNone(self.information([[x * 1e-6] for x in inputs]).uninformative())
        losses = self.information([[(x ** 2).mean()] for x in inputs])
        self.assertEqual(losses.informative(), [True])
        self.assertIsNone(self.information([[torch.tensor(2.0)], [torch.tensor(2.0)]],
                                           rule=DEFAULT).informative()[0] or None)

    def test_one_informative_output_is_enough(self):
        x = torch.randn(8, 8, generator=generator(20))
        information = self.information([[torch.ones(3), x]])
        self.assertEqual(information.informative(), [False, True])
        self.assertIsNone(information.uninformative())

    def test_a_constant_fails_some_trial_of_every_informative_output(self):
        # The guarantee behind the test's threshold: however the constant is chosen,
        # when the output is informative at least one trial rejects it.
        for seed in range(20):
            g = generator(seed)
            trials = [1 + 3e-5 * torch.randn(32, generator=g) for _ in range(3)]
            information = self.information([[t] for t in trials])
            facts = information.facts()[0]
            if not information.informative()[0]:
                continue
            for constant in (facts["centre"], float(trials[0].mean()), 1.0):
                cand = torch.full((32,), constant)
                self.assertTrue(any(not judged(t, cand, facts).passed for t in trials),
                                (seed, constant))

    def test_perturbed_inputs_move_by_an_ulp(self):
        x = torch.tensor([1.0, -3.0, 0.0, 1e-30, 2.0 ** 20, 1.75])
        for seed in range(4):
            moved = compare.perturbed(x, seed)
            ulp = torch.nextafter(x.abs(), torch.tensor(float("inf"))) - x.abs()
            ulps = (moved - x).abs() / ulp
            self.assertTrue(bool(((ulps >= 1) & (ulps <= 2) | (x == 0)).all()), ulps)
            self.assertEqual(float(moved[2]), 0.0)
        self.assertTrue(torch.equal(compare.perturbed(torch.arange(4), 1), torch.arange(4)))
        half = torch.ones(4, dtype=torch.bfloat16)
        self.assertEqual(compare.perturbed(half, 1).dtype, torch.bfloat16)
        self.assertFalse(torch.equal(compare.perturbed(half, 1), half))
        array = np.ones(3, dtype=np.float32)
        self.assertEqual(compare.perturbed(array, 1).dtype, np.float32)
        self.assertEqual(compare.perturbed([array, 3, "x"], 1)[1:], [3, "x"])


if __name__ == "__main__":
    unittest.main()
