"""Timing that cannot be fooled (issue 12): every hostile class is rejected when timing
is on, through the real server (tests/client.py) on the CPU, and honest candidates still
pass. GPU-only classes (a private stream, CUDA and Triton memoizers, lazy tensors on a
device) are in plugins/eval/tests/gpu_check.py's `timing` section."""

import math
import os
import shutil
import tempfile
import unittest
from unittest import mock

import numpy as np
import torch

from kforge_harness import protocol
from kforge_harness.tasks import runner
from kforge_harness.server import server
from kforge_harness.timing import timing, timing_plan

from . import client

TIMED = {"enabled": True, "warmup": 1, "trials": 5}


def timed_run(request_id, candidate, language="python", task="relu", sizes=None,
              **timing_options):
    return client.request(request_id, "run", task, candidate, language=language,
                          options={"timing": dict(TIMED, **timing_options)},
                          **({"sizes": sizes} if sizes else {}))


# (candidate under timing_cpu/, language, the words the rejection must contain)
HOSTILE = [
    ("memo_data_ptr", "python", "spot check failed: timed call"),
    ("memo_shape", "python", "spot check failed: timed call"),
    ("first_n_calls", "python", "spot check failed: timed call"),
    ("global_cache", "python", "spot check failed: timed call"),
    ("lazy_subclass", "python", "not a plain torch.Tensor"),
    ("python_thread", "python", "thread(s) more after building ModelNew"),
    ("cpp_thread", "cpp", "thread(s) more after building ModelNew"),
    ("fake_clock", "python", "the server's clock saw"),
]


class TimingGuardsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cache = tempfile.mkdtemp(prefix="kforge-test-cpp-")
        cls.server = client.Server(mode="fork", max_children=2,
                                   extra_env={"KFORGE_CPP_CACHE": cls.cache})
        requests = [timed_run(name, f"timing_cpu/{name}", language) for name, language, _ in HOSTILE]
        requests += [
            timed_run("fast_on_seen_inputs", "timing_cpu/fast_on_seen_inputs", confirm_speedup=0),
            timed_run("loaded_after_first_loop", "timing_cpu/loaded_after_first_loop", confirm_speedup=0),
            timed_run("slowed_once", "timing_cpu/slowed_once", confirm_speedup=0),
            timed_run("honest-python", "python_relu"),
            timed_run("honest-cpp", "relu_cpp", language="cpp"),
            timed_run("honest-linear", "linear_cpp", language="cpp", task="linear"),
            timed_run("honest-confirmed", "python_relu", confirm_speedup=0, trials=10),
            # The same hostile candidates without timing: only the timing's guards
            # reject them (each guard is what fails it above).
            client.request("untimed-memo", "run", "relu", "timing_cpu/memo_shape", language="python"),
            client.request("untimed-thread", "run", "relu", "timing_cpu/cpp_thread", language="cpp"),
        ]
        cls.responses = cls.server.ask(*requests, timeout=600)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()
        shutil.rmtree(cls.cache, ignore_errors=True)

    def test_each_hostile_class_is_rejected(self):
        for name, _, words in HOSTILE:
            with self.subTest(candidate=name):
                response = self.responses[name]
                self.assertEqual(response["status"], "fail", response)
                self.assertEqual(response["error_class"], "cheat_detected", response)
                self.assertTrue(response["message"].startswith("timing: "), response["message"])
                self.assertIn(words, response["message"])

    def test_spot_check_names_the_timed_call_and_its_seed(self):
        message = self.responses["global_cache"]["message"]
        self.assertRegex(message, r"timed call \d+ of 6 in the timing \(input seed \d+\)")

    def test_a_speedup_not_confirmed_by_other_inputs_is_rejected(self):
        response = self.responses["fast_on_seen_inputs"]
        self.assertEqual(response["error_class"], "cheat_detected", response)
        self.assertIn("was not confirmed", response["message"])
        self.assertIn("on the first loop's inputs took", response["message"])

    def test_a_machine_loaded_for_every_confirmation_is_not_a_rejection(self):
        # The false rejection of issue 12's note: load slowed both confirmation loops.
        # Their replayed calls are as slow as their fresh ones, and the slow speed counts.
        response = self.responses["loaded_after_first_loop"]
        self.assertEqual(response["status"], "pass", response)
        self.assertIn("speedup_confirmed", response["flags"])
        metrics = response["metrics"]
        self.assertGreaterEqual(metrics["candidate_ms"], 20.0)
        self.assertGreaterEqual(metrics["confirm_replayed_ms"], 20.0)

    def test_honest_candidates_pass_with_timing_on(self):
        for name in ("honest-python", "honest-cpp", "honest-linear", "honest-confirmed"):
            with self.subTest(candidate=name):
                response = self.responses[name]
                self.assertEqual(response["status"], "pass", response)
                metrics = response["metrics"]
                self.assertGreater(metrics["candidate_ms"], 0)
                self.assertGreaterEqual(metrics["timing_pool_sets"], 2)
                self.assertGreater(metrics["timing_spot_checks"], 0)
                self.assertGreater(metrics["timing_wall_ms"], 0)

    def test_statistics_describe_the_timed_calls_of_both_parties(self):
        for name, trials in (("honest-python", 5), ("honest-cpp", 5), ("honest-confirmed", 10)):
            metrics = self.responses[name]["metrics"]
            for party in ("candidate", "reference"):
                with self.subTest(candidate=name, party=party):
                    self.assertEqual(metrics[f"{party}_timing_trials"], trials)
                    low, high = metrics[f"{party}_ms_min"], metrics[f"{party}_ms_max"]
                    self.assertLessEqual(low, metrics[f"{party}_ms"])
                    self.assertLessEqual(metrics[f"{party}_ms"], high)
                    self.assertLessEqual(low, metrics[f"{party}_ms_mean"])
                    self.assertLessEqual(metrics[f"{party}_ms_mean"], high)
                    self.assertLessEqual(metrics[f"{party}_ms_std"], high - low)

    def test_one_confirmation_slowed_by_the_machine_is_not_a_rejection(self):
        response = self.responses["slowed_once"]
        self.assertEqual(response["status"], "pass", response)
        self.assertIn("speedup_confirmed", response["flags"])

    def test_a_confirmed_speedup_says_so(self):
        response = self.responses["honest-confirmed"]
        self.assertIn("speedup_confirmed", response["flags"])
        self.assertIn("confirm_wall_ms", response["metrics"])

    def test_only_timing_rejects_them(self):
        for name in ("untimed-memo", "untimed-thread"):
            with self.subTest(request=name):
                self.assertEqual(self.responses[name]["status"], "pass", self.responses[name])

    def test_bad_timing_options_are_refused(self):
        response = self.server.ask(timed_run("bad", "python_relu", spot_checks=-1))["bad"]
        self.assertEqual(response["error_class"], "harness_error")
        self.assertIn("options.timing.spot_checks", response["message"])


class ThreadPoolsTest(unittest.TestCase):
    """torch's CPU pool (OpenMP) starts at its first parallel operation, which may be the
    candidate's first forward: the child starts it before the server's baseline count,
    so an honest candidate with a pool of two threads is not taken for one that starts
    threads (OpenMP in a cpp candidate shares that pool)."""

    def test_torch_and_openmp_pools_are_not_counted_against_honest_candidates(self):
        cache = tempfile.mkdtemp(prefix="kforge-test-cpp-")
        server = client.Server(mode="fork", max_children=2,
                               extra_env={"KFORGE_CPP_CACHE": cache, "OMP_NUM_THREADS": "2"})
        try:
            # 1M elements: above torch's grain size, so its forward runs on the pool. The
            # speedup's confirmation is off: what is tested is the thread count, and on a
            # loaded machine a slow reference timing made an honest candidate 6.8x "faster"
            # and its confirmation, slowed by the same load, rejected it.
            big = {"batch_size": 256, "dim": 4096}
            unconfirmed = {"confirm_speedup": 1e9}
            responses = server.ask(timed_run("python", "python_relu", sizes=big, **unconfirmed),
                                   timed_run("cpp", "relu_cpp", language="cpp", sizes=big, **unconfirmed),
                                   timed_run("thread", "timing_cpu/cpp_thread", language="cpp"),
                                   timeout=600)
        finally:
            server.close()
            shutil.rmtree(cache, ignore_errors=True)
        for name in ("python", "cpp"):
            self.assertEqual(responses[name]["status"], "pass", responses[name])
        self.assertEqual(responses["thread"]["error_class"], "cheat_detected", responses["thread"])


class InputPoolTest(unittest.TestCase):
    def test_pool_size_is_bounded_by_bytes_and_reuses_every_slot(self):
        self.assertEqual(timing.pool_size(1 << 20, 23, 1024), 12)  # at most half the calls
        self.assertEqual(timing.pool_size(300 << 20, 23, 1024), 3)  # what 1 GB holds
        self.assertEqual(timing.pool_size(6 << 30, 23, 1024), 2)  # never fewer than two
        self.assertEqual(timing.pool_size(0, 3, 1024), 2)

    def test_refill_keeps_pointers_and_changes_values(self):
        def make(seed):
            generator = torch.Generator().manual_seed(seed)
            return [torch.randn(8, 8, generator=generator), np.full(4, seed, dtype=np.float32), 3]
        pool = timing.InputPool(make, [1, 2])
        tensor, array = pool.inputs(0)[0], pool.inputs(0)[1]
        pointer = tensor.data_ptr()
        pool.refill(0, 5)
        self.assertEqual(pool.inputs(2)[0].data_ptr(), pointer)
        self.assertTrue(torch.equal(pool.inputs(2)[0], make(5)[0]))
        self.assertIs(pool.inputs(2)[1], array)
        self.assertEqual(float(array[0]), 5.0)

    def test_refill_replaces_a_set_of_another_shape(self):
        pool = timing.InputPool(lambda seed: [torch.zeros(seed)], [1, 2])
        pool.refill(0, 3)
        self.assertEqual(pool.inputs(0)[0].shape, (3,))


class StatisticsTest(unittest.TestCase):
    """The numbers behind KernelBench's runtime_stats, from known per-call times."""

    def test_summarise_known_trials(self):
        got = timing.summarise([4.0, 1.0, 3.0, 2.0, 10.0])
        self.assertEqual(got["ms"], 3.0)
        self.assertEqual(got["p90"], 10.0)
        self.assertEqual(got["mean"], 4.0)
        # Population deviation, as KernelBench's np.std: sqrt((0+9+1+4+36) / 5).
        self.assertAlmostEqual(got["std"], math.sqrt(10.0))
        self.assertEqual((got["min"], got["max"], got["trials"]), (1.0, 10.0, 5))

    def test_one_trial_has_no_spread(self):
        got = timing.summarise([0.5])
        self.assertEqual((got["ms"], got["mean"], got["std"], got["trials"]), (0.5, 0.5, 0.0, 1))

    def test_a_loop_describes_its_timed_calls_not_its_warm_up(self):
        options = dict(protocol.DEFAULT_TIMING, warmup=2, trials=4)
        loop = timing_plan.Loop("timing", options, [], set_bytes=0)
        event = [50.0, 40.0, 1.0, 2.0, 3.0, 6.0]  # two slow warm-up calls first
        loop.event_ms, loop.synced_ms, loop.tail_ms = list(event), list(event), [0.0] * len(event)
        loop.ping_ms = [0.01] * len(event)
        loop.wall_ms = [e + 0.01 for e in event]
        got = loop.measured()
        self.assertEqual((got["trials"], got["min"], got["max"]), (4, 1.0, 6.0))
        self.assertEqual(got["mean"], 3.0)
        self.assertEqual(got["ms"], 2.5)

    def loop_with_gap(self, sync_gap, bare_gaps):
        """A finished loop of 0.01 ms kernels after whose own stream the whole device ran
        on for `sync_gap` ms, whose child measured `bare_gaps` for its empty brackets."""
        options = dict(protocol.DEFAULT_TIMING, warmup=1, trials=4)
        loop = timing_plan.Loop("timing", options, [], set_bytes=0)
        for call, bare in enumerate(bare_gaps):  # the child's aftermath of call - 1, then call
            loop.prepared_report({"prepared": call - 1, "bare_gap_ms": bare, "outputs": None})
            loop.event_ms.append(0.01)
        loop.synced_ms = [0.01 + sync_gap] * 5
        loop.tail_ms = [sync_gap] * 5
        loop.ping_ms = [0.05] * 5
        loop.wall_ms = [0.06 + sync_gap] * 5
        return loop

    def test_the_sync_guard_allows_what_an_empty_bracket_adds_in_that_process(self):
        # Honest microsecond kernels in a process whose synchronisation wakes 0.15 ms late.
        self.assertEqual(self.loop_with_gap(0.16, [0.15] * 5).measured()["trials"], 4)
        with self.assertRaisesRegex(timing_plan.LoopRejected, "an empty bracket's tail is 0 ms"):
            self.loop_with_gap(0.16, [0.0] * 5).measured()

    def test_the_host_s_own_time_in_a_call_is_not_a_tail(self):
        # An honest Triton call in a spawned child on the H100 host: 0.3 ms of launcher
        # on the host, 0.01 ms on the device, synchronised 0.31 ms after the bracket
        # opened; the device was done when its stream was.
        loop = self.loop_with_gap(0.0, [0.0] * 5)
        loop.synced_ms = [0.31] * 5
        self.assertEqual(loop.measured()["trials"], 4)

    def test_the_allowance_is_capped_so_a_claimed_slow_bracket_hides_no_private_stream(self):
        # 3 ms of work on a private stream, and brackets reported as 10 ms each: the
        # allowance stops at max_wall_gap_ms (0.5 ms).
        with self.assertRaisesRegex(timing_plan.LoopRejected, "an empty bracket's tail is 0.5 ms"):
            self.loop_with_gap(3.0, [10.0] * 5).measured()

    def test_a_malformed_bare_bracket_is_out_of_turn(self):
        loop = timing_plan.Loop("timing", dict(protocol.DEFAULT_TIMING), [], set_bytes=0)
        for bad in (None, -1.0, float("nan"), "0.1", True):
            with self.assertRaises(ValueError):
                loop.prepared_report({"prepared": -1, "bare_gap_ms": bad})

    def test_a_confirmation_replays_some_calls_wherever_the_spot_checks_fall(self):
        # 5 timed calls, 3 spot-checked: every placement leaves two unchecked calls, one
        # replayed and one fresh (a placement on both replay slots of a fixed pattern
        # once left none, and a loaded honest candidate was rejected in CI).
        options = dict(protocol.DEFAULT_TIMING, warmup=1, trials=5)
        first = timing_plan.Loop("timing", options, [], set_bytes=0)
        for _ in range(200):
            loop = timing_plan.Loop("confirm", options, [1, 2, 3], set_bytes=0, replay=first.seeds)
            self.assertEqual(len(loop.replayed), 1, loop.spots)
            self.assertFalse(loop.replayed & set(loop.spots))
            for k in loop.replayed:
                self.assertEqual(loop.seeds[k], first.seeds[k])

    def test_the_counted_loop_brings_its_own_statistics(self):
        fast = timing.summarise([1.0, 1.0, 1.2])
        slow = timing.summarise([2.0, 2.5, 9.0])
        self.assertIs(timing_plan.counted(fast, slow), slow)
        self.assertIs(timing_plan.counted(slow, fast), slow)

    def test_metric_names(self):
        metrics = timing_plan.statistics_metrics("candidate", timing.summarise([1.0, 3.0]))
        self.assertEqual(metrics, {"candidate_ms": 2.0, "candidate_ms_p90": 3.0,
                                   "candidate_ms_mean": 2.0, "candidate_ms_std": 1.0,
                                   "candidate_ms_min": 1.0, "candidate_ms_max": 3.0,
                                   "candidate_timing_trials": 2})


class SpotCheckDeclarationTest(unittest.TestCase):
    """Whether timed calls are spot-checked is the task format's declaration
    (TaskSession.no_spot_checks_reason), not a format name the server knows."""

    def test_kernelbench_formats_are_spot_checked(self):
        for task_format in [f for f in protocol.TASK_FORMATS if f != "kernelbenchx"]:
            with self.subTest(task_format=task_format):
                self.assertTrue(server.spot_checked(task_format))

    def test_kernelbenchx_declares_why_not(self):
        self.assertFalse(server.spot_checked("kernelbenchx"))
        self.assertIn("test run", runner.session_class("kernelbenchx").no_spot_checks_reason)

    def test_a_format_that_declares_it_is_honoured(self):
        class Unspottable(runner.TaskSession):
            no_spot_checks_reason = "a test format's timed calls have no stored outputs"

        declared = {"kernelbench-torch": Unspottable}
        with mock.patch.object(runner, "session_class",
                               lambda name: declared.get(name, runner.TaskSession)):
            self.assertFalse(server.spot_checked("kernelbench-torch"))
            self.assertTrue(server.spot_checked("kernelbench-numpy"))


class SpotPositionsTest(unittest.TestCase):
    def test_one_spot_is_always_late_and_all_are_timed_calls(self):
        for _ in range(200):
            positions = timing_plan.spot_positions(3, 20, 3)
            self.assertEqual(len(positions), 3)
            self.assertTrue(all(3 <= p < 23 for p in positions))
            self.assertTrue(any(p >= 18 for p in positions))

    def test_positions_vary(self):
        drawn = {tuple(timing_plan.spot_positions(3, 20, 3)) for _ in range(50)}
        self.assertGreater(len(drawn), 5)


if __name__ == "__main__":
    unittest.main()
