"""The size fitter (fit.py, footprint.py, forked.py) on small tasks that reproduce each way
size_scale broke real KernelBench tasks (tests/data/tasks/fit/)."""

import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

import torch

from kforge_harness.tasks import fit, footprint, forked, tasks
from kforge_harness.devices import Device
from tests import client

BUDGET_MB = 16
FIT_TASKS = os.path.join(client.DATA, "tasks", "fit")


def fit_task(name, budget_mb=BUDGET_MB, **kwargs):
    return fit.fit(os.path.join(FIT_TASKS, name + ".py"), budget_mb=budget_mb, **kwargs)


def task_code(path):
    with open(path, encoding="utf-8") as handle:
        return footprint.TaskCode(handle.read(), path)


def run_for_real(name, sizes=None, size_scale=1.0):
    """Builds the task at those sizes with the harness's own loader and runs its forward."""
    task = {"path": os.path.join(FIT_TASKS, name + ".py"), "sizes": sizes or {},
            "size_scale": size_scale}
    module, _ = tasks.load_task(task)
    torch.manual_seed(0)
    with torch.no_grad():
        model = module.Model(*module.get_init_inputs())
        return model(*module.get_inputs())


class FailureClassTest(unittest.TestCase):
    """For each class: size_scale breaks the task, fit keeps it valid within the budget and
    keeps what the model needs."""

    def check_fit(self, name, kept, broken_by_scale, error):
        with self.assertRaisesRegex(Exception, error):
            run_for_real(name, size_scale=broken_by_scale)
        result = fit_task(name)
        self.assertLessEqual(result.peak_mb, BUDGET_MB)
        self.assertTrue(result.changes, "the task must have had to shrink")
        for constant, value in kept.items():
            self.assertEqual(result.sizes[constant], value, constant)
        run_for_real(name, sizes=result.sizes)  # valid at the fitted sizes
        return result

    def test_pool_kernel_stays_inside_its_input(self):
        result = self.check_fit("pool_kernel", {"kernel_size": 9}, 1 / 32, "too small")
        self.assertGreaterEqual(min(result.sizes["height"], result.sizes["width"]), 9)

    def test_grouped_convolution_keeps_channels_divisible_by_groups(self):
        result = self.check_fit("grouped_conv", {"groups": 8, "kernel_size": 3}, 0.1,
                                "divisible by groups")
        self.assertEqual(result.sizes["in_channels"] % 8, 0)
        self.assertEqual(result.sizes["out_channels"] % 8, 0)

    def test_attention_keeps_embedding_divisible_by_heads(self):
        result = self.check_fit("attention_heads", {"num_heads": 8}, 0.05, "divisible by num_heads")
        self.assertEqual(result.sizes["embed_dim"] % 8, 0)

    def test_window_attention_keeps_image_divisible_by_patch_and_window(self):
        result = self.check_fit("window_attention",
                                {"patch_size": 4, "window_size": 7, "num_heads": 3}, 0.1,
                                "divide into windows")
        self.assertEqual(result.sizes["img_size"] % 28, 0)

    def test_layernorm_shape_keeps_matching_the_input(self):
        result = self.check_fit("layernorm_shape", {"out_channels": 64, "width": 32}, 0.05,
                                "normalized_shape")
        self.assertLess(result.sizes["batch_size"], 512)

    def test_asserted_input_size_is_kept(self):
        result = self.check_fit("asserted_size", {}, 0.25, "multiple of 32")
        self.assertEqual(result.sizes["image_size"] % 32, 0)

    def test_constants_that_must_stay_equal_shrink_together(self):
        result = fit_task("broadcast_shape")
        self.assertEqual(result.sizes["batch_size"], result.sizes["input_shape[0]"])
        self.assertLess(result.sizes["batch_size"], 32768)
        self.assertLessEqual(result.peak_mb, BUDGET_MB)
        run_for_real("broadcast_shape", sizes=result.sizes)

    def test_six_gigabyte_activation_shrinks_into_the_budget(self):
        estimate = footprint.on_meta(task_code(os.path.join(FIT_TASKS, "huge_activation.py")),
                                     {}, 0)
        self.assertGreater(estimate.peak_bytes, 6 * 1024 ** 3)
        result = fit_task("huge_activation")
        self.assertLessEqual(result.peak_mb, BUDGET_MB)
        self.assertIn("the meta device", result.note)

    def test_a_reference_reading_values_back_is_fitted_with_real_runs(self):
        result = fit_task("data_dependent", budget_mb=8)
        self.assertLessEqual(result.peak_mb, 8)
        self.assertIn("real runs", result.note)

    def test_numpy_reference_is_fitted_with_real_runs(self):
        result = fit_task("numpy_huge", budget_mb=8, task_format="kernelbench-numpy")
        self.assertLessEqual(result.peak_mb, 8)
        self.assertLess(result.sizes["batch_size"] * result.sizes["dim"], 16384 * 65536)


class FitContractTest(unittest.TestCase):
    def test_same_task_and_budget_give_the_same_sizes(self):
        self.assertEqual(fit_task("grouped_conv").sizes, fit_task("grouped_conv").sizes)

    def test_fixed_sizes_are_never_shrunk(self):
        result = fit_task("grouped_conv", base_sizes={"height": 128})
        self.assertEqual(result.sizes["height"], 128)
        self.assertNotIn("height", result.changes)
        self.assertLessEqual(result.peak_mb, BUDGET_MB)

    def test_a_fixed_size_the_task_lacks_is_an_error(self):
        with self.assertRaisesRegex(ValueError, "heigth.*height"):
            fit_task("grouped_conv", base_sizes={"heigth": 64})

    def test_size_scale_applies_first(self):
        result = fit_task("huge_activation", budget_mb=64, size_scale=1 / 16)
        self.assertLessEqual(result.sizes["batch_size"], 65536 // 16)
        self.assertEqual(result.changes["batch_size"][0], 65536)  # changes are against the file

    def test_size_scale_that_breaks_the_task_is_reported_as_such(self):
        with self.assertRaises(fit.TaskBroken) as caught:
            fit_task("window_attention", size_scale=0.1)
        self.assertIn("size_scale 0.1", str(caught.exception))
        self.assertIn("divide into windows", str(caught.exception))

    def test_a_forward_far_slower_than_its_work_shrinks_further(self):
        result = fit_task("slow_path", budget_mb=64, max_forward_s=0.05)
        # 1 CPU second at its own sizes, 20x the bound: at least 16x smaller
        self.assertLessEqual(result.sizes["batch_size"] * result.sizes["dim"], 1024 * 1024 // 16)

    def test_a_task_within_the_budget_keeps_its_sizes(self):
        result = fit.fit(client.task_path("relu"), budget_mb=BUDGET_MB)
        self.assertEqual(result.changes, {})
        self.assertIn("no size changed", result.note)

    def test_cannot_fit_names_each_constant_and_the_smallest_peak(self):
        with self.assertRaises(fit.CannotFit) as caught:
            fit_task("fixed_weights")
        error = caught.exception
        self.assertGreater(error.smallest_peak_mb, 64)
        self.assertIn("batch_size", error.blockers)
        self.assertRegex(str(error), r"cannot fit within 16 MB: the smallest peak reached is "
                                     r"6\d\.\d MB .*batch_size=\d+: shrinking it saves less")
        self.assertIn("the model's parameters and buffers take 64.0 MB", str(error))

    def test_missing_import_names_the_module(self):
        with self.assertRaises(fit.TaskBroken) as caught:
            fit_task("missing_import")
        self.assertEqual(caught.exception.missing_module, "kforge_fit_test_missing_module")
        self.assertIn("install kforge_fit_test_missing_module", str(caught.exception))

    def test_reference_failing_at_its_own_sizes_is_broken_not_unfittable(self):
        with self.assertRaisesRegex(fit.TaskBroken,
                                    r"fails at its own sizes, in forward: RuntimeError: shape "
                                    r".*broken_reference\.py:9"):
            fit_task("broken_reference")

    def test_a_file_that_does_not_parse_is_broken(self):
        with tempfile.NamedTemporaryFile("w", suffix=".py") as handle:
            handle.write("class Model(:\n")
            handle.flush()
            with self.assertRaisesRegex(fit.TaskBroken, r"\.py:1 does not parse"):
                fit.fit(handle.name, budget_mb=BUDGET_MB)

    def test_the_calling_process_is_left_as_it_was(self):
        torch.manual_seed(123)
        rng, dtype, grad = torch.get_rng_state(), torch.get_default_dtype(), torch.is_grad_enabled()
        fit_task("attention_heads")
        self.assertTrue(torch.equal(torch.get_rng_state(), rng))
        self.assertEqual((torch.get_default_dtype(), torch.is_grad_enabled()), (dtype, grad))
        self.assertNotIn("kforge_fit_task", sys.modules)

    def test_what_the_task_prints_stays_off_the_callers_stdout(self):
        answer = subprocess.run(
            [sys.executable, "-m", "kforge_harness.tasks.fit", "--budget-mb", "16", "--json",
             os.path.join(FIT_TASKS, "prints.py")],
            cwd=client.HARNESS_DIR, capture_output=True, text=True, timeout=300, check=False)
        self.assertEqual(answer.returncode, 0, answer.stderr)
        self.assertLessEqual(json.loads(answer.stdout)["peak_mb"], 16)
        self.assertIn("the reference talks on stdout", answer.stderr)

    def test_command_line_prints_sizes_and_peak(self):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            status = fit.main([os.path.join(FIT_TASKS, "pool_kernel.py"), "--budget-mb", "16"])
        self.assertEqual(status, 0)
        self.assertIn("kernel_size = 9\n", out.getvalue())
        self.assertRegex(out.getvalue(), r"height = \d+  \(was 256\)")
        self.assertRegex(out.getvalue(), r"peak \d+\.\d MB on cpu")


class FootprintTest(unittest.TestCase):
    def test_meta_peak_counts_live_tensors(self):
        code = task_code(client.task_path("relu"))
        outcome = footprint.on_meta(code, {"batch_size": 1024, "dim": 1024}, 0)
        self.assertTrue(outcome.ok, outcome.error)
        self.assertEqual(outcome.peak_bytes, 2 * 1024 * 1024 * 4)  # input and output

    def test_real_peak_agrees_with_the_meta_estimate(self):
        code = task_code(client.task_path("relu"))
        sizes = {"batch_size": 1024, "dim": 8192}  # 32 MB in, 32 MB out
        meta = footprint.on_meta(code, sizes, 0)
        real = footprint.on_device(code, sizes, Device("cpu"))
        self.assertTrue(real.ok, real.error)
        self.assertLess(abs(real.peak_bytes - meta.peak_bytes), 0.15 * meta.peak_bytes)

    def test_an_address_limit_makes_a_huge_run_fail_fast_as_out_of_memory(self):
        code = task_code(client.task_path("relu_huge"))
        outcome = footprint.on_device(code, {}, Device("cpu"), timeout_s=60,
                                      address_limit=256 * footprint.MB)
        self.assertEqual(outcome.kind, "memory", outcome.error)

    def test_smaller_values_keep_divisibility_first(self):
        self.assertEqual(fit.smaller_values(224), [112, 56, 32, 168, 196])
        self.assertEqual(fit.smaller_values(16), [8, 4, 2, 12, 14])
        self.assertEqual(fit.smaller_values(2), [1])


def cuda_device_present():
    """Without initialising CUDA here: torch.cuda.is_available() would initialise the
    driver, and no forked child of this process could use the GPU afterwards."""
    return torch.backends.cuda.is_built() and os.path.exists("/dev/nvidiactl")


@unittest.skipUnless(cuda_device_present(), "no CUDA device (/dev/nvidiactl) or torch without CUDA")
class CudaFitTest(unittest.TestCase):
    """On a GPU host: the verification runs on the device, in the fitter's child; the
    fitter runs in a fresh interpreter, as the reference worker would call it before
    touching the device (this test process may have initialised CUDA already)."""

    def fit_on_cuda(self, name, budget_mb):
        answer = subprocess.run(
            [sys.executable, "-m", "kforge_harness.tasks.fit", "--device", "cuda:0", "--budget-mb",
             str(budget_mb), "--json", os.path.join(FIT_TASKS, name + ".py")],
            cwd=client.HARNESS_DIR, capture_output=True, text=True, timeout=300, check=False)
        self.assertEqual(answer.returncode, 0, answer.stderr)
        return json.loads(answer.stdout)

    def test_fits_the_six_gigabyte_activation_into_a_device_budget(self):
        result = self.fit_on_cuda("huge_activation", 64)
        self.assertLessEqual(result["peak_mb"], 64)
        self.assertGreater(result["peak_mb"], 8)  # the allocator's real peak, not nothing
        self.assertLess(result["sizes"]["batch_size"], 65536)

    def test_grouped_convolution_stays_valid_on_the_device(self):
        sizes = self.fit_on_cuda("grouped_conv", 16)["sizes"]
        self.assertEqual((sizes["in_channels"] % 8, sizes["out_channels"] % 8), (0, 0))


class ForkedTest(unittest.TestCase):
    def test_a_child_of_a_process_that_ran_parallel_work_does_not_hang(self):
        threads = torch.get_num_threads()
        try:
            torch.set_num_threads(2)
            torch.randn(1 << 22).exp_()  # starts OpenMP's thread pool in this process
            value = forked.call(lambda: float(torch.ones(1 << 22).exp_().sum()), timeout_s=60)
        finally:
            torch.set_num_threads(threads)
        self.assertGreater(value, 0)

    def test_a_child_running_too_long_is_killed(self):
        with self.assertRaises(forked.ChildFailed) as caught:
            forked.call(lambda: time.sleep(30), timeout_s=0.5)
        self.assertEqual(caught.exception.kind, "timeout")


if __name__ == "__main__":
    unittest.main()
