"""redteam20 (helper): the timing boundary at 6ca6276 (the clock's resolution floor,
timing_plan.resolution_ms; the preparation's noise the reference's alone). Each test
asserts the SECURE outcome; a test that fails is a hole. Run them one by one by name on
the shared VM. A control is its attack's file with one line replaced (VARIANTS).

Seen (CPU: the shared 2-core VM at 6ca6276; GPU: an H200 through the device tool, which
copies the lead's working tree as it stood at 01:20 UTC, not this branch, so
the GPU numbers come from compact inline copies of these candidate files' logic driven
by tests.client, not from this file's GPU tests, which were not run as written):
- TinyForwardLeanTest (attack 1, CPU): SECURE. relu_1mb (reference 0.135 ms, its
  harness_ms 0.066: the floor's worst point, twice the floor): the lean loop reporting
  0 ms passed at 1.0 (charged 0.1347, below_clock_resolution), controls 0.959 and 0.894;
  relu (64 KB, reference 0.0487 ms, below the 0.066 ms of harness work): the liar 1.0,
  charged to the reference's median, controls 1.0 (below_clock_resolution too). Again:
  relu_1mb (reference 0.191 ms) liar 1.0 (charged 0.191), controls 1.0 and 1.0 (within
  noise); relu (0.0499 ms) liar 1.0, controls 1.0.
- PreparationWorkTest (attack 2, CPU): SECURE. The weights (2 MB) read in every call's
  preparation: 1.0 (prepare 0.21 ms against the control's 0.03, charged 0.18), controls
  1.0 and 0.74. Again: 1.0 (charged 0.031), controls 1.0 and 1.0.
- SlotCopyGpuTest (attack 3a, GPU): HOLE, the open hole of red team 6 ("the hand-over's
  copy runs in the candidate's process") with its size: 4 GB out of 64 MB in (reference
  2.62 ms, its gap 4.0 to 6.1 ms), outputs written straight into the slot, 0 ms
  reported: 5.45x, 4.14x, 3.05x (charged 0.48, 0.63, 0.86 ms; speedup_confirmed,
  below_clock_resolution) against the same kernel into a tensor of its own plus the
  harness's copy at 0.913x, 0.897x, 0.914x (2.87 to 2.94 ms): the resolution floor
  (0.1 ms) does not bound it, and "2x at worst" (README, Timing) does not hold on a GPU.
- KbxCpuArgumentGpuTest (attack 3b, GPU): HOLE. read_slot (fill and write_back skipped,
  the function reads the slot's device view, honest report): 9.77x (candidate_ms 0.1,
  the floor; speedup_confirmed, below_clock_resolution) where x moved to the GPU by the
  function itself scored 0.117x (8.32 ms) and the harness path 0.353x and 1.0. One run.
  skip_write_back with every report 0 ms: 10.40x (speedup_over_10x), 1.0, 1.0, 2.18x,
  1.0; its control (the same lie, the copies done) 1.0, 0.117x, 1.0. With an honest
  report skipping write_back gained nothing (0.986x).
- StatisticsTest (attack 4, CPU): HOLE for everything but the median. 9 calls of 20
  reporting 0 ms through the harness's own loop: pass, speedup 0.994, no flag, median
  3.08 ms (controls 3.15, 3.13), candidate_ms_mean 2.02 against controls' 3.19 and 3.15,
  candidate_ms_min 0.0, std 1.92 against 0.38: the KernelBench export's `runtime` is
  candidate_ms_mean. Again under load spikes: the liar's mean 6.08 (std 13.7) against
  controls' 9.43 and 3.77, its min 0.483 (the median's charge, 0.483, on calls of 0)
  against 3.08 and 3.09, its median 3.43: the mean hides in load, the min does not.
  A third run (this test as written, failing): the liar's (min, median, mean) (0.367,
  3.26, 2.10), controls (2.79, 3.27, 3.25) and (3.01, 3.43, 3.46); speedup 1.0
  (speedup_within_noise), no other flag.

After the fixes (main, the lead): StatisticsTest passes, each call vouched for by its
own clock less one call's load and the mean no less than the median
(timing_plan.vouched): the liar's (min, median, mean) (2.07, 3.17, 4.60) against its
controls' (2.91, 3.18, 3.68) and (3.04, 3.35, 3.69); its fastest call, bounded only call
by call, came out 0.42 and 1.05 ms in two runs under load. The
GPU copy attacks (3a, 3b) stay open: expected failures, sized in the README."""


import unittest

from tests import client
from tests.test_attacks_forged import show
from tests.test_attacks_redteam12 import assert_no_gain_over
from tests.test_attacks_redteam18 import LEAN_OVER_CONTROL

VARIANTS = {
    "redteam20/tiny_lean_control": ("redteam9/lean_loop", "LIE_MS = 0.0", "LIE_MS = None"),
    "redteam20/slot_honest": ("redteam20/slot_lean_liar", "_child.CandidateChild._timed_loop = _lean_loop", "pass"),
    "redteam20/kbx_harness": ("redteam20/kbx_copies_skipped", 'MODE = "read_slot"', 'MODE = "harness"'),
    "redteam20/kbx_gpu_honest": ("redteam20/kbx_copies_skipped", 'MODE = "read_slot"', 'MODE = "gpu_honest"'),
    "redteam20/kbx_harness_liar": ("redteam20/kbx_copies_skipped", 'MODE = "read_slot"', 'MODE = "harness_liar"'),
    "redteam20/kbx_skip_write_back": ("redteam20/kbx_copies_skipped", 'MODE = "read_slot"', 'MODE = "skip_write_back"'),
    "redteam20/stats_control": ("redteam20/stats_liar", "LIE_SHARE = 9", "LIE_SHARE = 0"),
    "redteam20/prep_lean_control": ("redteam20/prep_lean_liar", "IN_PREPARE = True", "IN_PREPARE = False"),
}

EXTRA = ("candidate_ms_mean", "candidate_ms_min", "candidate_ms_std", "candidate_ms_p90", "speedup", "measured_speedup", "candidate_ms", "reference_ms", "timing_charged_ms",
         "reference_harness_ms", "reference_gap_ms", "timing_gap_ms", "timing_prepare_ms",
         "confirm_prepare_ms", "timing_wall_ms")


def _ask(server, candidate, task, timed=True, kbx=False):
    rid = candidate.replace("/", "_")
    file, line, replacement = VARIANTS.get(candidate, (candidate, None, None))
    request = client.request(rid, "run", task, file, language="python", limits={"timeout_s": 300},
                             options={"trials": 2, "timing": {"enabled": timed}},
                             **({"task_format": "kernelbenchx"} if kbx else {}))
    if line is not None:
        code = request["candidate"]["code"]
        assert line in code, (file, line)
        request["candidate"]["code"] = code.replace(line, replacement)
    response = server.ask(request, timeout=900)[rid]
    show(candidate, task, response)
    metrics = response.get("metrics") or {}
    print("  RT20", candidate, response.get("status"), response.get("error_class"), response.get("flags"),
          " ".join(f"{k}={metrics[k]:.4g}" for k in EXTRA if isinstance(metrics.get(k), (int, float))),
          flush=True)
    return response


class TinyForwardLeanTest(client.SharedServerTest):
    """Attack 1: a lean loop reporting 0 ms on a forward about twice the refunded
    harness work (relu_1mb) and on one shorter than it (relu, 64 KB)."""
    MAX_CHILDREN = 1

    def test_lean_liar_just_above_the_floor(self):
        assert_no_gain_over(self, lambda name: _ask(self.server, name, "redteam20/relu_1mb"),
                            "redteam20/tiny_lean_control", "redteam9/lean_loop", LEAN_OVER_CONTROL)

    def test_lean_liar_below_the_floor(self):
        assert_no_gain_over(self, lambda name: _ask(self.server, name, "relu"),
                            "redteam20/tiny_lean_control", "redteam9/lean_loop", LEAN_OVER_CONTROL)


class PreparationWorkTest(client.SharedServerTest):
    """Attack 2: the weights read in each call's preparation (no clock, no CPU cache
    flush), the forward honest and honestly reported."""
    MAX_CHILDREN = 1

    def test_weights_warmed_in_the_preparation_gain_nothing(self):
        assert_no_gain_over(self, lambda name: _ask(self.server, name, "redteam20/matvec_2mb"),
                            "redteam20/prep_lean_control", "redteam20/prep_lean_liar", LEAN_OVER_CONTROL)


class StatisticsTest(client.SharedServerTest):
    """Attack 4: the statistics beside the median (candidate_ms_mean, the KernelBench
    export's `runtime`) come from the candidate's own reports; only the median is bounded
    by the server's clock. 9 calls of 20 reporting 0 ms, the forward honest."""
    MAX_CHILDREN = 1

    def test_reported_statistics_are_bounded_by_the_clock(self):
        seen = {}
        for name in ("redteam20/stats_control", "redteam20/stats_liar", "redteam20/stats_control"):
            response = _ask(self.server, name, "redteam12/relu_16mb")
            self.assertEqual(response["status"], "pass", response)
            seen.setdefault(name, []).append(response["metrics"])
        attack = seen["redteam20/stats_liar"][0]
        print("\n(min, median, mean): controls "
              f"{[(m['candidate_ms_min'], m['candidate_ms'], m['candidate_ms_mean']) for m in seen['redteam20/stats_control']]}, "
              f"attack {(attack['candidate_ms_min'], attack['candidate_ms'], attack['candidate_ms_mean'])}", flush=True)
        # Secure: the statistics the KernelBench export reads are no better than the same
        # loop's honestly reported ones. Before the fix (reports read as given): the
        # liar's fastest call 0.0 and 0.28 ms against its controls' 2.2 to 3.1, its mean
        # 2.02 and 2.10 against 3.15 to 3.47. Since (timing_plan.vouched), each call
        # counts no less than its clock less one call's load: 2.03 and 3.17 against
        # 2.84-2.98 and 3.37-3.45.
        # A lying call counts no less than its clock less one call's load (three MADs of
        # the reference's gaps and the gap bound's allowance), which on this loaded VM is
        # most of a call (the liar's fastest 0.42 to 2.03 ms against its controls' 2.6 to
        # 3.2): the fastest call is not asserted on. The mean, which the export reads, is
        # no less than the median (timing_plan.vouched).
        controls = seen["redteam20/stats_control"]
        self.assertGreaterEqual(attack["candidate_ms_mean"], attack["candidate_ms"], attack)
        self.assertGreaterEqual(attack["candidate_ms_mean"] * LEAN_OVER_CONTROL,
                                min(m["candidate_ms_mean"] for m in controls), attack)


class GpuServerTest(client.SharedServerTest):
    """A shared server on cuda:0 wherever this interpreter sees a CUDA device."""

    @classmethod
    def setUpClass(cls):
        cls.server = client.Server(mode="fork", max_children=cls.MAX_CHILDREN, device="cuda:0")


try:
    import torch as _torch
    _HAS_CUDA = _torch.cuda.is_available()
except ImportError:
    _HAS_CUDA = False


@unittest.skipUnless(_HAS_CUDA, "needs a CUDA device (a GPU's hand-over copy)")
class SlotCopyGpuTest(GpuServerTest):
    """Attack 3 (GPU): a lean loop writing its outputs straight into the output slot
    leaves out the hand-over's copy, which the reference's gap refunds whole (4 GB out of
    64 MB in: the copy moves twice the forward's bytes)."""
    MAX_CHILDREN = 1

    def test_outputs_written_into_the_slot_gain_nothing(self):
        # Closed by the arena (handover/arena.py): the reference's outputs are read by the
        # task host where they lie, so its gap holds no copy for a candidate to leave out
        # (3.05x to 5.45x before). The control is the honest ModelNew in the harness's own
        # loop: the lean control that copies into the slot now pays for its copy.
        _ask(self.server, "redteam20/slot_honest", "redteam20/repeat_4gb")
        assert_no_gain_over(self, lambda name: _ask(self.server, name, "redteam20/repeat_4gb"),
                            "redteam20/slot_honest", "redteam20/slot_lean_liar", LEAN_OVER_CONTROL)


@unittest.skipUnless(_HAS_CUDA, "needs a CUDA device (a kernelbenchx unit's CPU argument on a GPU)")
class KbxCpuArgumentGpuTest(GpuServerTest):
    """Attack 3b (GPU): a kernelbenchx unit's CPU tensor argument, copied by the child
    from the slot (fill) and back (write_back) inside the bracket, both refunded whole."""
    MAX_CHILDREN = 1

    def _run(self, name):
        return _ask(self.server, name, "redteam20/cpu_row_sum", kbx=True)

    # Closed by the slots' host-memory twins (kbx_calls.LentUnit): the CPU argument lies
    # in host memory the child uses as it is, so there is no fill or write_back to skip
    # (10.4x and 2.18x in 2 runs of 5, and 9.77x, before).
    def test_write_back_skipped_gains_nothing(self):
        assert_no_gain_over(self, self._run, "redteam20/kbx_harness_liar", "redteam20/kbx_skip_write_back",
                            LEAN_OVER_CONTROL)

    def test_slot_read_in_place_of_the_copy_gains_nothing(self):
        self._run("redteam20/kbx_gpu_honest")
        assert_no_gain_over(self, self._run, "redteam20/kbx_harness", "redteam20/kbx_copies_skipped",
                            LEAN_OVER_CONTROL)


if __name__ == "__main__":
    unittest.main()
