"""redteam21 (helper): the GPU arena hand-over of f503fe6 (handover/arena.py: the child's
caching allocator takes its main thread's segments from device memory the task host
lent; a timed call rings the doorbell with its outputs' offsets and the host copies them
out of its own mapping; an output outside the arena is copied by the child and flagged
outputs_copied_in_child). Each test asserts the SECURE (or fair) outcome: a test that
fails is a hole. Every class needs a CUDA device (skipped elsewhere). NOT run by their
author (no GPU on the helper's VM): written for the lead's H200. Run them one by one by
name; each prints an "RT21" line per run with the verdict and the timing metrics.

Run by the lead on the device tool's H200 against the arena of f503fe6, then after the
fixes they led to: 1 and 2 were holes (closed: an output in an input slot is read there,
more outputs than a ring carries go in a table, the slot-copy flag is the host's word)
and now gain nothing; 3 was a hole (1.34x, then 1.80x; closed by the host's probe of
the device as it hears a ring: 1.0 against its control's 1.0); 4's CUDA graph is carved
from the arena (fair, no flag), torch.compile's reduce-overhead failed under the arena's
routing (closed: a routing begun from Python has the thread alone, graph_pool_handle()
pools are carved from the arena; it passes, timed as it times alone) and the crowded
arena is fair within 25% (flagged: its outputs are copied); 5, 6 and 7 hold.

Attacks (the docstring of each file under tests/data/candidates/redteam21/ says more):
1. ReferenceOutsideArenaGpuTest (expected HOLE): a reference whose output is its input
   (x.relu_(), 512 MiB): its own timing child copies it (not in its arena), the copy sits
   in its gap, refunded whole to every candidate; a fresh ReLU reporting 0 ms is charged
   its forward less that copy: the clock's floor.
2. ManyOutputsSlotGpuTest (expected HOLE): 600 outputs (> doorbell.MAX_OFFSETS): every
   loop's child copies them (600 launches, refunded whole); a lean loop computing into
   the slot and ringing SLOT skips them, and is not even flagged.
3. EarlyRingGpuTest (expected: a small gain, or cheat_detected): ringing with the
   offsets right after the kernel's launch overlaps the ring's latency with the kernel.
4. FairnessGpuTest (expected unfair or broken): honest candidates whose outputs miss the
   arena (an arena filled by the model's own buffers) are charged a copy the reference
   does not pay; CUDA graphs and torch.compile(mode="reduce-overhead") run with the
   arena's never-ended pool entry ahead of their own in the allocator's
   captures_underway (a capture's allocations go to the arena's pool, not the graph's
   private one).
5. DoorbellFloodGpuTest (expected secure, a DoS probe): 4 threads flooding the doorbell.
7. AllocatorCallbackGpuTest (expected HOLE, honest hang): the arena's Python allocator
   callback runs inside the caching allocator's mutex; a background thread freeing a
   tensor with the GIL held deadlocks against it.
6. NonContiguousOutputGpuTest (expected secure, regression): non-contiguous honest
   outputs, and a reference returning x.t(); Clock.settle makes them dense before the
   hand-over, so the host's raw copy reads the right bytes."""

import subprocess
import sys
import unittest

from tests import client
from tests.test_attacks_forged import show
from tests.test_attacks_redteam12 import assert_no_gain_over
from tests.test_attacks_redteam18 import LEAN_OVER_CONTROL

try:
    import torch as _torch
    _HAS_CUDA = _torch.cuda.is_available()
except ImportError:
    _HAS_CUDA = False

# name -> (candidate file, [(line, replacement), ...]): a control is its attack's file
# with lines replaced.
VARIANTS = {
    "redteam21/noncontiguous_padded": ("redteam21/noncontiguous_honest",
                                       [('MODE = "transpose"', 'MODE = "padded"')]),
    "redteam21/inplace_fresh_honest": ("redteam21/inplace_fresh", [("LIE = True", "LIE = False")]),
    "redteam21/inplace_twin": ("redteam21/inplace_fresh",
                               [('MODE = "fresh"', 'MODE = "twin"'), ("LIE = True", "LIE = False")]),
    "redteam21/early_ring_control": ("redteam21/early_ring", [("EARLY = True", "EARLY = False")]),
    "redteam21/many_outputs_honest": ("redteam21/many_outputs_slot", [("LIAR = True", "LIAR = False")]),
    "redteam21/thread_churn_quiet": ("redteam21/thread_churn_honest", [("CHURN = True", "CHURN = False")]),
    "redteam21/arena_uncrowded": ("redteam21/arena_crowded", [("CROWD_MB = 4096", "CROWD_MB = 0")]),
}

EXTRA = ("speedup", "measured_speedup", "candidate_ms", "candidate_ms_mean", "reference_ms",
         "timing_charged_ms", "reference_harness_ms", "reference_gap_ms", "timing_gap_ms",
         "timing_wall_ms", "reference_wall_ms", "timing_spot_checks")

# redteam21/compiled_relu timed alone: CUDA events around each call, median of 50.
COMPILED_ALONE = """
import statistics, torch
compiled = torch.compile(lambda x: torch.relu(x), mode="reduce-overhead")
inputs = [torch.randn(8192, 8192, device="cuda") for _ in range(2)]
for k in range(10):
    compiled(inputs[k % 2])
times = []
for k in range(50):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    compiled(inputs[k % 2])
    end.record()
    torch.cuda.synchronize()
    times.append(start.elapsed_time(end))
print(statistics.median(times))
"""

RELU_64MB = {"batch_size": 4096, "dim": 4096}  # as tests/test_arena.py
RELU_256MB = {"batch_size": 8192, "dim": 8192}


def _ask(server, candidate, task, sizes=None, timed=True, timeout_s=600):
    return ask(server, candidate, task, VARIANTS, "RT21", sizes, timed, timeout_s)


def ask(server, candidate, task, variants, tag, sizes=None, timed=True, timeout_s=600):
    """One run request, printed as a `tag` line with its timing metrics; `candidate` None:
    the task's reference as its own candidate, else a file or one of `variants` (name ->
    (file, [(line, replacement), ...]))."""
    rid = (candidate or "reference").replace("/", "_") + "_" + task.replace("/", "_")
    file, replaced = variants.get(candidate, (candidate, []))
    request = client.request(rid, "run", task, file, language="python",
                             limits={"timeout_s": timeout_s},
                             options={"trials": 2, "timing": {"enabled": timed}},
                             **({"sizes": sizes} if sizes else {}))
    for line, replacement in replaced:
        code = request["candidate"]["code"]
        assert line in code, (file, line)
        request["candidate"]["code"] = code.replace(line, replacement)
    response = server.ask(request, timeout=1500)[rid]
    show(candidate or "reference", task, response)
    metrics = response.get("metrics") or {}
    print(" ", tag, candidate, task, response.get("status"), response.get("error_class"),
          response.get("flags"),
          " ".join(f"{k}={metrics[k]:.4g}" for k in EXTRA if isinstance(metrics.get(k), (int, float))),
          "|", (response.get("message") or "")[:300], flush=True)
    return response


class GpuServerTest(client.SharedServerTest):
    """A shared server on cuda:0, one child at a time (timing attacks and controls)."""
    MAX_CHILDREN = 1

    @classmethod
    def setUpClass(cls):
        cls.server = client.Server(mode="fork", max_children=cls.MAX_CHILDREN, device="cuda:0")


@unittest.skipUnless(_HAS_CUDA, "needs a CUDA device (the arena is device memory)")
class ReferenceOutsideArenaGpuTest(GpuServerTest):
    """Attack 1: the reference's output is its input (x.relu_(), 512 MiB), outside its arena:
    its child's copy is in its gap, refunded to every candidate."""

    TASK = "redteam21/inplace_relu"

    def test_a_fresh_relu_reporting_0ms_gains_nothing_over_its_honest_report(self):
        # Secure: the liar's charge no less than its honestly reported twin's over 1.5.
        # Expected HOLE: charged at the clock's floor (<= 0.1 ms) against ~0.22 ms.
        assert_no_gain_over(self, lambda name: _ask(self.server, name, self.TASK),
                            "redteam21/inplace_fresh_honest", "redteam21/inplace_fresh",
                            LEAN_OVER_CONTROL)

    def test_the_references_own_code_is_timed_like_the_reference(self):
        # The reference's code as a candidate: it pays the same child copy as the
        # reference, refunded: speedup ~1.0, but flagged outputs_copied_in_child for the
        # task's own pattern (informative; the flag is asserted absent as the fair outcome).
        response = _ask(self.server, "redteam21/inplace_twin", self.TASK)
        self.assertEqual(response["status"], "pass", response.get("message"))
        self.assertAlmostEqual(response["metrics"]["speedup"], 1.0, delta=0.25)
        self.assertNotIn("outputs_copied_in_child", response.get("flags", []))


@unittest.skipUnless(_HAS_CUDA, "needs a CUDA device (the arena is device memory)")
class ManyOutputsSlotGpuTest(GpuServerTest):
    """Attack 2: 600 outputs of 1 MB, more than a ring names: every loop's child copies
    them into the slot (600 launches), refunded whole with the reference's gap."""

    TASK = "redteam21/many_outputs"

    def test_outputs_computed_into_the_slot_gain_nothing(self):
        # Expected HOLE: the lean loop charged at the floor (<= 0.1 ms) against the honest
        # harness loop's ~0.27 ms or more (the ReLU of 600 MB).
        assert_no_gain_over(self, lambda name: _ask(self.server, name, self.TASK),
                            "redteam21/many_outputs_honest", "redteam21/many_outputs_slot",
                            LEAN_OVER_CONTROL)

    def test_outputs_handed_over_in_the_slot_are_flagged(self):
        # A ring of SLOT means the child copied (or wrote) its outputs into the slot; the
        # server flagged outputs_copied_in_child only from the report's own "copied": true,
        # which the lean loop leaves out: unflagged then. The flag is now the task host's word.
        response = _ask(self.server, "redteam21/many_outputs_slot", self.TASK)
        if response["status"] == "pass":
            self.assertIn("outputs_copied_in_child", response.get("flags", []), response.get("metrics"))


@unittest.skipUnless(_HAS_CUDA, "needs a CUDA device (the arena is device memory)")
class EarlyRingGpuTest(GpuServerTest):
    """Attack 3: the offsets rung right after the kernel's launch, before it ends; both
    loops report 0 ms, so the clock alone charges them."""

    # Was 1.34x and 1.80x against its control's 1.0 on the H200 (a 0.13 ms ReLU, both
    # reporting 0 ms): the host's answer to a ring ran beside the work of a child that
    # rang before its work was done. Closed: the host probes the device as it hears a
    # ring and charges what of its answer the device was busy for (host.py _copy_out).
    def test_ringing_before_the_kernel_ends_gains_nothing(self):
        runs = {}
        for name in ("redteam21/early_ring_control", "redteam21/early_ring", "redteam21/early_ring_control"):
            response = _ask(self.server, name, "relu", RELU_256MB)
            if name == "redteam21/early_ring" and response["status"] != "pass":
                # The host's copy ran before the kernel ended: stale outputs, caught by a
                # spot check (the arena is never poisoned). Secure.
                self.assertEqual(response["error_class"], "cheat_detected", response)
                return
            self.assertEqual(response["status"], "pass", response)
            runs.setdefault(name, []).append(response["metrics"])
        attack = runs["redteam21/early_ring"][0]
        controls = runs["redteam21/early_ring_control"]
        walls = [m["timing_wall_ms"] for m in controls]
        charges = [m["candidate_ms"] for m in controls]
        print(f"\nwall_ms: controls {walls}, attack {attack['timing_wall_ms']}; candidate_ms: "
              f"controls {charges}, attack {attack['candidate_ms']}", flush=True)
        # Secure: its brackets no shorter than its control's (what the ring's latency is
        # worth), within 10 %, and its charge no less than the control's over 1.25.
        self.assertGreaterEqual(attack["timing_wall_ms"], 0.9 * min(walls), (walls, attack))
        self.assertGreaterEqual(attack["candidate_ms"] * 1.25, min(charges), (charges, attack))


@unittest.skipUnless(_HAS_CUDA, "needs a CUDA device (the arena is device memory)")
class FairnessGpuTest(GpuServerTest):
    """Attack 4: honest candidates whose outputs miss the arena are charged a copy the
    reference (whose outputs lie in its arena) does not pay."""

    def assert_fair(self, candidate, control):
        # Fair: the same kernel timed like its control, within 25 %. Expected: ~0.5x of
        # the control (one 256 MB copy on a 256 MB ReLU), flagged outputs_copied_in_child.
        base = _ask(self.server, control, "relu", RELU_256MB)
        self.assertEqual(base["status"], "pass", base.get("message"))
        response = _ask(self.server, candidate, "relu", RELU_256MB)
        self.assertEqual(response["status"], "pass", response.get("message"))
        self.assertGreaterEqual(response["metrics"]["speedup"], 0.75 * base["metrics"]["speedup"],
                                (response["metrics"], response.get("flags")))

    def test_an_honest_cuda_graph_is_charged_like_eager(self):
        self.assert_fair("redteam21/graph_relu", None)

    def test_an_honest_reduce_overhead_compile_is_timed_as_it_times_alone(self):
        # It failed under the arena's routing ("These storage data ptrs are not allocated
        # in pool (0, 2) but should be", runtime_error on the H200); now a routing begun
        # from Python has the thread alone and graph trees' pools are carved from the
        # arena. Its graph trees copy each call's inputs into their own placeholders
        # (inputs are new every call, here as in any real use), so it is slower than
        # eager: fair is the time it takes alone, on two inputs in turn as the slots are.
        response = _ask(self.server, "redteam21/compiled_relu", "relu", RELU_256MB)
        self.assertEqual(response["status"], "pass", response.get("message"))
        self.assertNotIn("outputs_copied_in_child", response.get("flags", []))
        alone = subprocess.run([sys.executable, "-c", COMPILED_ALONE], capture_output=True, text=True,
                               timeout=600)
        self.assertEqual(alone.returncode, 0, alone.stderr[-3000:])
        alone_ms = float(alone.stdout.split()[-1])
        print(f"  compiled relu: {response['metrics']['candidate_ms']:.4f} ms charged, "
              f"{alone_ms:.4f} ms alone", flush=True)
        self.assertLessEqual(response["metrics"]["candidate_ms"], 1.25 * alone_ms)

    def test_an_honest_model_with_buffers_of_its_own_is_charged_like_one_without(self):
        self.assert_fair("redteam21/arena_crowded", "redteam21/arena_uncrowded")


@unittest.skipUnless(_HAS_CUDA, "needs a CUDA device (the arena is device memory)")
class AllocatorCallbackGpuTest(GpuServerTest):
    """Attack 7 (regression): the arena's allocator was Python (a ctypes callback) called
    inside the caching allocator's mutex: a second Python thread freeing tensors while
    holding the GIL could deadlock the main thread's allocation. It is C now
    (harness/native/arena_allocator.c), which never waits for the GIL."""

    def test_an_honest_model_with_a_background_thread_is_not_hung(self):
        quiet = _ask(self.server, "redteam21/thread_churn_quiet", "relu", RELU_64MB, timeout_s=180)
        self.assertEqual(quiet["status"], "pass", quiet.get("message"))
        # Secure: pass. The hole: the child deadlocks (GIL vs allocator mutex) and runs
        # into its wall-clock limit.
        churn = _ask(self.server, "redteam21/thread_churn_honest", "relu", RELU_64MB, timeout_s=180)
        self.assertEqual(churn["status"], "pass", (churn.get("error_class"), churn.get("message")))


@unittest.skipUnless(_HAS_CUDA, "needs a CUDA device (the doorbell carries arena offsets)")
class DoorbellFloodGpuTest(GpuServerTest):
    """Attack 5: the doorbell pipe flooded from the candidate's threads."""

    def test_a_flooded_doorbell_is_the_candidates_fault_and_the_host_survives(self):
        flood = _ask(self.server, "redteam21/doorbell_flood", "relu", RELU_64MB, timeout_s=120)
        self.assertNotEqual(flood["status"], "pass", flood.get("metrics"))
        self.assertNotIn(flood.get("error_class"), ("harness_error", "task_error"), flood.get("message"))
        # The same task's host serves the next job as before.
        after = _ask(self.server, None, "relu", RELU_64MB)
        self.assertEqual(after["status"], "pass", after.get("message"))


@unittest.skipUnless(_HAS_CUDA, "needs a CUDA device (the arena is device memory)")
class NonContiguousOutputGpuTest(GpuServerTest):
    """Attack 6 (regression): honest outputs whose strides are not contiguous, and a
    reference that returns a transposed view."""

    SIZES = {"batch_size": 1024, "dim": 2048}

    def assert_honest_passes(self, candidate, task="relu"):
        response = _ask(self.server, candidate, task, self.SIZES)
        self.assertEqual(response["status"], "pass", response.get("message"))

    def test_a_transposed_honest_output_passes(self):
        self.assert_honest_passes("redteam21/noncontiguous_honest")

    def test_a_padded_and_sliced_honest_output_passes(self):
        self.assert_honest_passes("redteam21/noncontiguous_padded")

    def test_a_reference_returning_a_transposed_view_times(self):
        self.assert_honest_passes(None, "redteam21/transposed_relu")


if __name__ == "__main__":
    unittest.main()
