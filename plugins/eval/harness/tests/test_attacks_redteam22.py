"""redteam22 (helper): the task host's probe of 5197b61 (reference/host.py _heard,
_copy_out: as the host hears a ring it queues a probe kernel between two timing events;
min(its answer's CPU time, how long the device was still busy) is added to the call's
bracket end) and the arena's new routing (handover/arena.py _route_graphs: a routing of
the child's allocations begun from Python ends the arena's while it lasts, `_aside`
counting them; graph_pool_handle() pools are carved from the arena). Each test asserts
the SECURE (or fair) outcome: a test that fails is a hole. Every class needs a CUDA
device (skipped elsewhere). NOT run by their author (no GPU on the helper's VM): written
for the lead's H200. Run them one by one by name; each prints an "RT22" line per run
with the verdict and the timing metrics (and the candidates print "RT22 ring_lean"
lines to their log: how long they waited for the host, whether FIONREAD worked).

What the probe leaves out, read in the code: the time between the child's ring and the
host's _heard() (select() waking the host, the serve loop) is never charged, and the
probe measures only whether the device is busy at the moment it is queued, on the
compute engine. So a child may (1) ring BEFORE it launches any work and launch it only
once the host has read the ring: the probe, queued just before that read, finds the
device idle, and the work runs beside the rest of the host's answer (the offsets
checked, the copies queued one by one), which is refunded with the reference's gap; the
host's copies are queued behind the probe, not behind the child's kernel (another
context), so they are right only where each copy is launched after its output was
written: a task with many outputs (256 copies queued in Python, a few microseconds
each) makes that sure; (2) keep its work off the compute engine (a device-to-device
cudaMemcpyAsync runs on a copy engine) and ring right after launching it, as red team
21 did: the probe kernel may then run at once beside the copy.

Run by the lead on the device tool's H200 against 6196d65 and then 24a0d6e (the host's
answer holds the device: a probe and a hold kernel, the copies a kernel behind them, the
bracket closed at the copies done plus the answer's CPU time less the hold's device time,
anticheat/answer.py; the arena's routing stands aside only for routings of the thread
it routes): 1 gains nothing (0.62x, then 0.96x, against its control's 1.0); 2 gains
nothing (1.0); 3 is cheat_detected (the copy read the last call's outputs); 4 was a hole
(the helper thread's routing moved the arena's to the helper) and is fair; 5 passes
unflagged, but compile_and_capture was flagged outputs_copied_in_child until the arena
stopped giving half of itself to the main thread's pool at install (its graph pools
then missed room).

Attacks (tests/data/candidates/redteam22/*.py docstrings say more); each against its
honest twin, the same lean loop ringing after a sync (both report 0 ms: the clock alone
charges them):
1. DrainRowsGpuTest (expected HOLE): redteam22/rows_relu (a 1 GiB ReLU returned as 256
   rows): ring first, wait until the host read the ring (FIONREAD on the doorbell
   pipe), then launch the one ReLU kernel (~0.5 ms). Expected: the kernel hidden in
   the host's answer (~1-2 ms of queuing 256 copies), charged near the clock's floor
   against the control's ~0.5 ms; or cheat_detected (a copy that read a row before the
   kernel wrote it: secure).
2. CopyEngineRingGpuTest (expected HOLE or secure): redteam22/rows_clone (a 1 GiB copy
   as 256 rows): the copy (cudaMemcpyAsync device to device, a copy engine) launched,
   then the ring (red team 21's early ring). If the probe kernel runs beside another
   context's copy-engine work, the host's whole answer overlaps the child's copy:
   charged near the floor. If a copy engine is time-sliced between contexts (the host's
   copies wait for the child's), or torch's D2D copy is a kernel, no gain.
3. DrainRaceGpuTest (expected cheat_detected or HOLE): attack 1 on one output (relu,
   256 MB, ~0.13 ms): the host's one copy is queued some tens of microseconds into the
   kernel and races it; trailing it, the kernel is hidden (HOLE); overtaking it, stale
   rows are caught by the spot checks (secure).
4. ThreadRoutingGpuTest (expected unfair, a HOLE of the fair kind): an honest model
   whose helper THREAD allocates inside torch.cuda.use_mem_pool: the wrappers end the
   arena's routing (the main thread's) and begin it again on the helper thread
   (step_back calls _cuda_beginAllocateCurrentThreadToPool where the last routing
   ended), so the main thread's output misses the arena until the next preparation's
   reclaim(): copied in the child and flagged, every call (~0.5x its control).
5. RoutingHonestGpuTest (expected pass, fair): honest routings the new wrappers must
   keep working: a scratch MemPool under use_mem_pool on the main thread, graphs
   sharing one graph_pool_handle() pool, a manual capture feeding a
   torch.compile(mode="reduce-overhead") function."""

import unittest

from tests.test_attacks_redteam12 import assert_no_gain_over
from tests.test_attacks_redteam18 import LEAN_OVER_CONTROL
from tests.test_attacks_redteam21 import RELU_256MB, GpuServerTest, ask

try:
    import torch as _torch
    _HAS_CUDA = _torch.cuda.is_available()
except ImportError:
    _HAS_CUDA = False

# name -> (candidate file, [(line, replacement), ...]): a control is its attack's file
# with lines replaced.
_ROWS = ("ROWS = False", "ROWS = True")
_CLONE = ('OP = "relu"', 'OP = "clone"')
_AFTER_SYNC = ('MODE = "drain"', 'MODE = "after_sync"')
VARIANTS = {
    # 1: rows_relu
    "redteam22/drain_rows": ("redteam22/ring_lean", [_ROWS]),
    "redteam22/drain_rows_control": ("redteam22/ring_lean", [_ROWS, _AFTER_SYNC]),
    # 2: rows_clone
    "redteam22/engine_rows": ("redteam22/ring_lean", [_ROWS, _CLONE,
                                                      ('MODE = "drain"', 'MODE = "after_launch"')]),
    "redteam22/engine_rows_control": ("redteam22/ring_lean", [_ROWS, _CLONE, _AFTER_SYNC]),
    # 3: relu, one output (the file as it is is the attack)
    "redteam22/drain_race_control": ("redteam22/ring_lean", [_AFTER_SYNC]),
    # 4
    "redteam22/thread_pool_quiet": ("redteam22/thread_pool_honest", [("IN_POOL = True", "IN_POOL = False")]),
    # 5
    "redteam22/shared_pool_graphs": ("redteam22/routings_honest",
                                     [('MODE = "scratch_pool"', 'MODE = "shared_pool_graphs"')]),
    "redteam22/compile_and_capture": ("redteam22/routings_honest",
                                      [('MODE = "scratch_pool"', 'MODE = "compile_and_capture"')]),
}

def _ask(server, candidate, task, sizes=None, timed=True, timeout_s=600):
    return ask(server, candidate, task, VARIANTS, "RT22", sizes, timed, timeout_s)


@unittest.skipUnless(_HAS_CUDA, "needs a CUDA device (the arena and the probe are device things)")
class DrainRowsGpuTest(GpuServerTest):
    """Attack 1: ring first, launch the work once the host has read the ring (its probe
    already queued on an idle device); 256 outputs make the host's answer longer than the
    kernel, and every copy is queued after its row is written."""

    TASK = "redteam22/rows_relu"

    def test_work_launched_once_the_host_heard_the_ring_gains_nothing(self):
        # Secure: cheat_detected, or charged no less than the control over 1.5.
        # Expected HOLE: charged at the floor (<= 0.1 ms) against ~0.5 ms.
        assert_no_gain_over(self, lambda name: _ask(self.server, name, self.TASK),
                            "redteam22/drain_rows_control", "redteam22/drain_rows",
                            LEAN_OVER_CONTROL)


@unittest.skipUnless(_HAS_CUDA, "needs a CUDA device (the arena and the probe are device things)")
class CopyEngineRingGpuTest(GpuServerTest):
    """Attack 2: red team 21's early ring, the work a device-to-device copy (a copy
    engine's), which the probe kernel may not wait for."""

    TASK = "redteam22/rows_clone"

    def test_a_copy_engines_work_rung_early_gains_nothing(self):
        # Secure: cheat_detected, or charged no less than the control over 1.5.
        # Expected HOLE where the probe runs beside the child's copy: the floor against
        # the control's copy (~0.5-0.7 ms for 1 GiB).
        assert_no_gain_over(self, lambda name: _ask(self.server, name, self.TASK),
                            "redteam22/engine_rows_control", "redteam22/engine_rows",
                            LEAN_OVER_CONTROL)


@unittest.skipUnless(_HAS_CUDA, "needs a CUDA device (the arena and the probe are device things)")
class DrainRaceGpuTest(GpuServerTest):
    """Attack 3: attack 1 on a single 256 MB output: the host's one copy races the kernel."""

    def test_a_kernel_racing_the_hosts_copy_gains_nothing(self):
        # Secure: cheat_detected (the copy overtook the kernel: stale outputs), or no gain.
        # HOLE: the copy trailed the kernel's writes, the kernel hidden.
        assert_no_gain_over(self, lambda name: _ask(self.server, name, "relu", RELU_256MB),
                            "redteam22/drain_race_control", "redteam22/ring_lean",
                            LEAN_OVER_CONTROL)


@unittest.skipUnless(_HAS_CUDA, "needs a CUDA device (the arena is device memory)")
class ThreadRoutingGpuTest(GpuServerTest):
    """Attack 4 (fairness): a helper thread's use_mem_pool moves the arena's routing off
    the main thread until the next preparation."""

    def test_a_helper_threads_pool_does_not_cost_the_main_threads_output_a_copy(self):
        quiet = _ask(self.server, "redteam22/thread_pool_quiet", "relu", RELU_256MB)
        self.assertEqual(quiet["status"], "pass", quiet.get("message"))
        self.assertNotIn("outputs_copied_in_child", quiet.get("flags", []))
        pooled = _ask(self.server, "redteam22/thread_pool_honest", "relu", RELU_256MB)
        self.assertEqual(pooled["status"], "pass", (pooled.get("error_class"), pooled.get("message")))
        # Fair: not flagged, within 25 % of the control. Expected: flagged, ~0.5x.
        self.assertNotIn("outputs_copied_in_child", pooled.get("flags", []), pooled.get("metrics"))
        self.assertGreaterEqual(pooled["metrics"]["speedup"], 0.75 * quiet["metrics"]["speedup"],
                                (pooled["metrics"], quiet["metrics"]))


@unittest.skipUnless(_HAS_CUDA, "needs a CUDA device (the arena is device memory)")
class RoutingHonestGpuTest(GpuServerTest):
    """5: honest routings begun from Python that the wrappers must keep working."""

    def assert_honest(self, candidate, timed_like_eager=True):
        response = _ask(self.server, candidate, "relu", RELU_256MB)
        self.assertEqual(response["status"], "pass", (response.get("error_class"), response.get("message")))
        self.assertNotIn("outputs_copied_in_child", response.get("flags", []), response.get("metrics"))
        if timed_like_eager:  # the same ReLU kernel as the eager reference
            self.assertGreaterEqual(response["metrics"]["speedup"], 0.75, response["metrics"])

    def test_a_scratch_pool_on_the_main_thread(self):
        self.assert_honest("redteam22/routings_honest")

    def test_graphs_sharing_one_graph_pool_handle(self):
        self.assert_honest("redteam22/shared_pool_graphs")

    def test_a_manual_capture_feeding_a_reduce_overhead_compile(self):
        # Its graph trees copy each call's input into their placeholder: slower than
        # eager (red team 21), so only pass and where its outputs lie are asserted.
        self.assert_honest("redteam22/compile_and_capture", timed_like_eager=False)


if __name__ == "__main__":
    unittest.main()
