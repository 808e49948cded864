"""Comparison rules and the dynamic anti-cheat helpers."""

import math
import unittest
from unittest import mock

import numpy as np
import torch

from kforge_harness.anticheat import observe as anticheat
from kforge_harness.judge import compare, outputs
from kforge_harness import protocol
from kforge_harness.judge.compare import compare_outputs, compare_tensors
from kforge_harness.judge.outputs import SnapshotLeaf, TensorLeaf
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
        self.assertTrue(compare_tensors(half, half + 0.0005, ALLCLOSE).passed)
        # Within fp16's per-element 1e-2, but 9e-3 of the whole output: over max_rel_l2.
        self.assertTrue(compare_tensors(half, half + 0.009, rule("allclose")).passed)
        self.assertIn("off as a whole", compare_tensors(half, half + 0.009, ALLCLOSE).message)
        ints = torch.arange(10)
        self.assertFalse(compare_tensors(ints, ints + 1, ALLCLOSE).passed)

    def test_integers_are_exact_at_any_magnitude(self):
        # A difference of 2**63 wraps to -2**63 in int64 (and stays negative under abs);
        # one of 1 beyond 2**53 is lost in float64. Both are wrong.
        ref = torch.tensor([1 << 62, 1 << 53, 5], dtype=torch.int64)
        wrapped = torch.tensor([-(1 << 62), 1 << 53, 5], dtype=torch.int64)  # c - r = -2**63
        low_bit = torch.tensor([1 << 62, (1 << 53) + 1, 5], dtype=torch.int64)
        for cand, off in ((wrapped, "2**63"), (low_bit, "one low bit")):
            with self.subTest(off):
                outcome = compare_tensors(ref, cand, ALLCLOSE)
                self.assertFalse(outcome.passed, outcome.message)
                self.assertGreaterEqual(outcome.max_abs_diff, 1)
        self.assertTrue(compare_tensors(ref, ref.clone(), ALLCLOSE).passed)
        flags = torch.tensor([True, False, True])
        self.assertFalse(compare_tensors(flags, ~flags, ALLCLOSE).passed)

    def test_integers_made_from_floats_are_allowed_the_references_rounding_noise(self):
        # The reference's integer output moved in 25 elements, by one, at inputs moved by
        # an ulp: noise 5. A candidate may then be off in 4 * 25 + 4 elements, by 16 * 5
        # as a whole.
        # (Of 100000 elements: the default rule's max_coarse_share, 1%, stays out of it.)
        ref = TensorLeaf(torch.zeros(100000, dtype=torch.int64))
        noisy = {"noise": 5.0, "moved": 25}

        def off(count, by=1):
            cand = torch.zeros(100000, dtype=torch.int64)
            cand[:count] = by
            return compare.compare_leaf(ref, TensorLeaf(cand), ALLCLOSE, facts=noisy)

        self.assertTrue(off(104).passed)  # ||c - r|| = 10.2
        too_many = off(105)
        self.assertEqual(too_many.error_class, protocol.NUMERICAL_MISMATCH)
        self.assertIn("105 of 100000 elements differ; an integer output must be exact, or", too_many.message)
        self.assertIn("at most 104 elements off (4 times the 25 the ulp moved, plus 4)", too_many.message)
        too_far = off(10, by=30)  # few elements, but ||c - r|| = 94.9 > 80
        self.assertFalse(too_far.passed)
        self.assertIn("||c - r|| <= 16 * 5", too_far.message)
        # Without measured noise (a count, an index from integers) one element is too many.
        one = torch.zeros(100000, dtype=torch.int64)
        one[0] = 1
        for facts in (None, {"noise": 0.0}, {"noise": 1.0}):
            with self.subTest(facts=facts):
                self.assertFalse(compare.compare_leaf(ref, TensorLeaf(one), ALLCLOSE, facts=facts).passed)

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


class ChunkedComparisonTest(unittest.TestCase):
    """The comparison reads outputs in chunks: the verdict and the metrics must be those
    of one pass over the whole output, wherever the chunks fall."""

    def setUp(self):
        self.saved = compare.CHUNK_ELEMENTS
        self.addCleanup(setattr, compare, "CHUNK_ELEMENTS", self.saved)

    def both(self, ref, cand, rule_):
        whole = compare_tensors(ref, cand, rule_)
        compare.CHUNK_ELEMENTS = 7
        chunked = compare_tensors(ref, cand, rule_)
        compare.CHUNK_ELEMENTS = self.saved
        return whole, chunked

    def test_same_verdicts_and_metrics_in_chunks(self):
        torch.manual_seed(0)
        ref = torch.randn(10, 13)
        for cand, rule_ in ((ref + 1e-6, ALLCLOSE), (ref + torch.randn(10, 13) * 1e-3, ALLCLOSE),
                            (ref + 1e-4, rule("max_abs_diff", limit=1e-3)),
                            (ref * 1.02, rule("share_over_limit", rtol=1e-2, max_share=0.5))):
            whole, chunked = self.both(ref, cand, rule_)
            self.assertEqual(whole.error_class, chunked.error_class)
            self.assertEqual(whole.message, chunked.message)
            self.assertAlmostEqual(whole.max_abs_diff, chunked.max_abs_diff, places=12)
            self.assertAlmostEqual(whole.mean_abs_diff, chunked.mean_abs_diff, places=12)

    def test_deferred_chunks_give_the_statistics_of_one_chunk_at_a_time(self):
        """measure()/fold() (no wait per chunk) against add(): bit for bit, real and
        complex, with a reference whose spread and tolerances all come into play."""
        torch.manual_seed(1)
        whole = compare.WholeOutput(ALLCLOSE, torch.float32)
        for ref in (torch.randn(1000) * 3 + 1000, torch.randn(999, dtype=torch.complex64)):
            cand = ref + torch.randn(ref.shape, dtype=ref.dtype) * float(ref.abs().mean()) * 1.5e-3
            deferred = compare._Stats(1e-3, 1e-3, whole)
            self.assertTrue(compare._accumulate(deferred, TensorLeaf(ref), TensorLeaf(cand), 64, 0, ref.numel()))
            each = compare._Stats(1e-3, 1e-3, whole)
            compare._accumulate_each(each, TensorLeaf(ref), TensorLeaf(cand), 64, 0, ref.numel())
            fields = ("max_diff", "finite_sum", "finite_count", "within", "over_coarse", "diff_squares",
                      "ref_squares", "max_rel", "rel_sum")
            self.assertEqual([getattr(deferred, f) for f in fields], [getattr(each, f) for f in fields])
            self.assertEqual(vars(deferred.spread), vars(each.spread))
            self.assertGreater(each.within, 0)
            self.assertGreater(each.finite_count - each.within, 0)
        ref = torch.randn(100)
        ref[70] = math.inf
        self.assertFalse(compare._accumulate(compare._Stats(1e-3, 1e-3, whole), TensorLeaf(ref),
                                             TensorLeaf(ref.clone()), 64, 0, 100),
                         "a value that is not finite is left to add()")

    def test_nan_and_infinity_in_a_later_chunk(self):
        ref = torch.zeros(40)
        ref[33] = math.inf
        cand = ref.clone()
        whole, chunked = self.both(ref, cand, ALLCLOSE)
        self.assertTrue(whole.passed and chunked.passed)
        cand[35] = math.nan
        whole, chunked = self.both(ref, cand, ALLCLOSE)
        self.assertIn("1 NaN value(s)", chunked.message)
        self.assertTrue(math.isnan(chunked.max_abs_diff))

    def test_non_contiguous_and_complex(self):
        ref = torch.randn(9, 5).t()
        whole, chunked = self.both(ref, ref.contiguous() + 1e-7, ALLCLOSE)
        self.assertTrue(chunked.passed)
        cref = torch.randn(17, dtype=torch.complex64)
        whole, chunked = self.both(cref, cref * 1.1, ALLCLOSE)
        self.assertEqual(whole.message, chunked.message)

    def test_complex_elements_are_counted_once(self):
        # torch.linalg.eig, torch.fft: a complex output equal to the reference passes, and
        # an element off in one part counts as one element of the output's, not as two
        # real numbers (before, an equal output read "-17 of 17 elements differ").
        cref = torch.randn(17, dtype=torch.complex64)
        for whole_or_chunked in self.both(cref, cref.clone(), ALLCLOSE):
            self.assertTrue(whole_or_chunked.passed, whole_or_chunked.message)
        cand = cref.clone()
        cand[16] += 1j
        for outcome in self.both(cref, cand, ALLCLOSE):
            self.assertIn("1 of 17 elements", outcome.message)
            self.assertAlmostEqual(outcome.metrics["share_over_coarse"], 1 / 17)

    def test_peak_memory_is_bounded_by_the_chunk(self):
        # The float64 temporaries of one chunk, not of the output: a comparison of a
        # 64 MB output with 1 MB chunks must allocate far less than the output.
        compare.CHUNK_ELEMENTS = 1 << 17
        ref = torch.randn(1 << 24)
        cand = ref.clone()
        tracemalloc_peak = _peak_allocated(lambda: compare_tensors(ref, cand, ALLCLOSE))
        self.assertLess(tracemalloc_peak, 16 << 20)


def _cuda_and_triton():
    import importlib.util
    return torch.cuda.is_available() and importlib.util.find_spec("triton") is not None


@unittest.skipUnless(_cuda_and_triton(), "needs a CUDA device and triton (the fused kernel's path)")
class FusedKernelTest(unittest.TestCase):
    """judge/fused.py on a CUDA device against add()'s torch arithmetic, chunk by chunk."""

    FIELDS = ("max_diff", "finite_sum", "finite_count", "within", "over_coarse", "diff_squares",
              "ref_squares", "max_rel", "rel_sum")

    def both(self, ref, cand, chunk, rule_=ALLCLOSE):
        atol, rtol = compare.tolerance(rule_, ref.dtype)
        whole = compare.WholeOutput(rule_, ref.dtype)
        fused_stats = compare._Stats(atol, rtol, whole, ref.device)
        finite = compare._accumulate(fused_stats, TensorLeaf(ref), SnapshotLeaf(cand), chunk, 0, ref.numel())
        each = compare._Stats(atol, rtol, whole, ref.device)
        compare._accumulate_each(each, TensorLeaf(ref), TensorLeaf(cand), chunk, 0, ref.numel())
        return finite, fused_stats, each

    def test_the_kernel_measures_what_add_does(self):
        torch.manual_seed(3)
        for dtype in (torch.float32, torch.bfloat16, torch.float16, torch.float64):
            for numel, chunk in ((1, 64), (4095, 4096), (4097, 1 << 12), ((1 << 20) + 3, 1 << 18)):
                ref = (torch.randn(numel, device="cuda") * 3 + 1000).to(dtype)
                # About a third of the elements beyond the dtype's tolerance.
                atol, rtol = compare.tolerance(ALLCLOSE, dtype)
                noise = torch.randn(numel, device="cuda") * (atol + rtol * ref.double().abs())
                cand = (ref.double() + noise).to(dtype)
                finite, got, want = self.both(ref, cand, chunk)
                where = f"{dtype} numel {numel} chunk {chunk}"
                self.assertTrue(finite, where)
                self.assertIsNone(compare.fused._failed, where)
                for field in self.FIELDS:
                    # The relative error (a metric) is divided in float32 by the kernel.
                    close = 1e-6 if field in ("max_rel", "rel_sum") and dtype != torch.float64 else 1e-9
                    self.assertTrue(math.isclose(getattr(got, field), getattr(want, field),
                                                 rel_tol=close, abs_tol=1e-12), f"{where}: {field}")
                self.assertEqual(got.spread.count, want.spread.count, where)
                for mine, theirs in zip(got.spread.means + got.spread.squares,
                                        want.spread.means + want.spread.squares):
                    self.assertTrue(math.isclose(mine, theirs, rel_tol=1e-9, abs_tol=1e-9), where)
                if numel > 1:
                    self.assertGreater(want.within, 0, where)
                    self.assertGreater(want.finite_count - want.within, 0, where)

    def test_values_that_are_not_finite_are_left_to_add(self):
        for bad in (math.nan, math.inf, -math.inf):
            ref = torch.randn(10000, device="cuda")
            cand = ref.clone()
            cand[9000] = bad
            finite, _, _ = self.both(ref, cand, 4096)
            self.assertFalse(finite, bad)
            ref[9000] = cand[9000] = bad
            finite, _, _ = self.both(ref, cand, 4096)
            self.assertFalse(finite, f"{bad} in both")

    def test_verdicts_on_the_device_are_those_on_the_host(self):
        torch.manual_seed(4)
        ref = torch.randn(3 << 20, device="cuda")
        for cand in (ref + 1e-6, ref + torch.randn_like(ref) * 1e-3, ref * 1.5):
            on_device = compare.compare_leaf(TensorLeaf(ref), SnapshotLeaf(cand), ALLCLOSE)
            on_host = compare.compare_leaf(TensorLeaf(ref.cpu()), TensorLeaf(cand.cpu()), ALLCLOSE)
            self.assertEqual(on_device.error_class, on_host.error_class)
            for name, value in on_host.metrics.items():
                close = 1e-6 if "rel_error" in name and name != "rel_l2_error" else 1e-9
                self.assertTrue(math.isclose(on_device.metrics[name], value, rel_tol=close, abs_tol=1e-15),
                                f"{name}: {on_device.metrics[name]} on the device, {value} on the host")


def _peak_allocated(call):
    """Peak resident growth in bytes while `call` runs (VmHWM after a reset)."""
    with open("/proc/self/clear_refs", "w", encoding="ascii") as handle:
        handle.write("5")
    def field(name):
        with open("/proc/self/status", encoding="ascii") as status:
            return next(int(l.split()[1]) * 1024 for l in status if l.startswith(name))
    base = field("VmRSS:")
    call()
    return field("VmHWM:") - base


class SlicedLeavesTest(unittest.TestCase):
    """Leaves compared in slices, one thread each, with chunks and slices made small
    enough to test: the verdict and the metrics are those of one pass, whatever the
    number of workers."""

    def setUp(self):
        saved = (compare.CHUNK_ELEMENTS, compare.MIN_CHUNKS_PER_WORKER)
        self.addCleanup(lambda: (setattr(compare, "CHUNK_ELEMENTS", saved[0]),
                                 setattr(compare, "MIN_CHUNKS_PER_WORKER", saved[1])))
        compare.CHUNK_ELEMENTS, compare.MIN_CHUNKS_PER_WORKER = 64, 2

    @staticmethod
    def leaves(ref, cand):
        return [TensorLeaf(ref)], [SnapshotLeaf(cand)]

    def assert_same(self, one, other):
        """The same verdict, message and metrics (to float64 rounding)."""
        self.assertEqual((one.error_class, one.message), (other.error_class, other.message))
        for name, value in one.metrics.items():
            if math.isnan(value):
                self.assertTrue(math.isnan(other.metrics[name]), name)
            else:
                self.assertAlmostEqual(value, other.metrics[name], places=9, msg=name)

    def test_the_slices_cover_every_element_once(self):
        for numel, workers in ((1000, 3), (64 * 7, 4), (64 * 8 + 1, 4), (100, 8), (5000, 1)):
            slices = compare._slices(numel, workers)
            self.assertLessEqual(len(slices), workers)
            self.assertEqual(sum(count for _, count in slices), numel)
            self.assertEqual([start for start, _ in slices],
                             [sum(c for _, c in slices[:i]) for i in range(len(slices))])
            self.assertTrue(all(start % 64 == 0 for start, _ in slices))
        self.assertGreater(len(compare._slices(64 * 8 + 1, 4)), 1)

    def test_the_same_verdict_and_metrics_with_any_number_of_workers(self):
        torch.manual_seed(0)
        ref = torch.randn(1000) * 3
        ref[700] = math.inf
        noisy = ref + torch.randn(1000) * 1e-6
        off_late = ref.clone()
        off_late[950] += 1.0  # in the last slice only
        nan_late = ref.clone()
        nan_late[999] = math.nan
        for cand in (ref.clone(), noisy, off_late, nan_late):
            ref_leaves, cand_leaves = self.leaves(ref, cand)
            one = compare.compare_leaves(ref_leaves, cand_leaves, ALLCLOSE, workers=1)
            for workers in (2, 3, 7):
                self.assert_same(one, compare.compare_leaves(ref_leaves, cand_leaves, ALLCLOSE,
                                                             workers=workers))
        self.assertIn("1 of 1000 elements", compare.compare_leaves(
            *self.leaves(ref, off_late), ALLCLOSE, workers=3).message)

    def test_a_device_out_of_memory_leaves_the_comparison_to_the_cpu(self):
        ref, cand = torch.randn(1000), torch.randn(1000)
        on_cpu = compare.compare_leaves(*self.leaves(ref, cand), ALLCLOSE)
        ref_leaves, cand_leaves = [TensorLeaf(ref)], [TensorLeaf(cand)]
        for leaf in ref_leaves + cand_leaves:  # as if both lived on one accelerator
            leaf.device = torch.device("meta")
        real = compare._compare

        def compare_once(ref_leaf, cand_leaf, rule, where, workers, device):
            if device is not None:
                raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
            return real(ref_leaf, cand_leaf, rule, where, workers, device)

        with mock.patch.object(compare, "_compare", compare_once):
            self.assert_same(on_cpu, compare.compare_leaves(ref_leaves, cand_leaves, ALLCLOSE))


class AntiCheatHelpersTest(unittest.TestCase):
    def test_aliasing(self):
        x = torch.randn(4, 4)
        self.assertEqual(anticheat.aliasing([x.view(-1)], [x]), [0, 0])
        self.assertEqual(anticheat.aliasing([x[2:]], [torch.randn(2), x]), [0, 1])
        self.assertIsNone(anticheat.aliasing([x.clone()], [x]))

    def test_changed_inputs(self):
        x, y = torch.randn(3), torch.tensor([math.nan, 1.0])
        before = anticheat.input_digests([x, y])
        self.assertEqual(anticheat.changed_inputs(before, anticheat.input_digests([x.clone(), y.clone()])), [])
        x[0] += 1
        self.assertEqual(anticheat.changed_inputs(before, anticheat.input_digests([x, y])), [0])

    def test_digest_sees_every_bit(self):
        # -0.0 == 0.0 and NaN payloads compare equal or never equal as values; the
        # checksum goes by the bits.
        zeros = torch.zeros(5)
        negative = zeros.clone()
        negative[3] = -0.0
        self.assertNotEqual(outputs.digest(zeros), outputs.digest(negative))
        ints = torch.arange(10)
        swapped = ints.clone()
        swapped[[2, 7]] = swapped[[7, 2]]
        self.assertNotEqual(outputs.digest(ints), outputs.digest(swapped))
        strided = torch.randn(6, 4).t()
        self.assertEqual(outputs.digest(strided), outputs.digest(strided.contiguous()))
        off_word = torch.randn(17)[1:9]  # a view that starts at byte 4
        self.assertEqual(outputs.digest(off_word), outputs.digest(off_word.clone()))

    def test_a_change_that_keeps_public_sums_is_seen(self):
        # +1 at lanes 0 and 2, -2 at lane 1: the lanes' sum and their sum weighted by the
        # positions (1, 2, 3...) are both unchanged; the weights are secret.
        lanes = torch.arange(100, dtype=torch.int64) * 7
        forged = lanes.clone()
        forged[:3] += torch.tensor([1, -2, 1])
        self.assertEqual(int(lanes.sum()), int(forged.sum()))
        positions = torch.arange(1, 101)
        self.assertEqual(int((lanes * positions).sum()), int((forged * positions).sum()))
        self.assertNotEqual(outputs.digest(lanes), outputs.digest(forged))



if __name__ == "__main__":
    unittest.main()
