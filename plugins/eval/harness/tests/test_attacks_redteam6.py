"""A sixth red team's candidates (tests/data/candidates/redteam6/), written against the
harness at 94b2514: the inputs published inside the call's bracket (`publish`), the
outputs taken as it closes (`take`), the confirmation against a reference timed anew,
the freeze between calls, the spot checks. Each test starts its own fork-mode CPU
server (a fresh reference timing per attack), prints what it returned, then asserts what
should happen: the cheat caught (fail, the right error_class), no gain (speedup <=
NO_GAIN), or the harness not blamed. Each hole found says how it was closed; the one
still open (the hand-over's copy, whose gain varies from run to run) holds only that the
verdict is the candidate's. Numbers are what the
server returned on the 2-core VM (its servers froze with cgroup v2;
signal_freezer_python.sh runs one as on a host without it).

Run one test at a time, by name (each takes one to a few minutes on the 2-core VM)."""

import os
import unittest

from kforge_harness.handover import read as outputs_read
from tests import client
from tests.test_attacks import NO_GAIN
from tests.test_attacks_forged import show

TIMEOUT_S = 240
NOT_THE_CANDIDATES = ("harness_error", "task_error", "host_error")
# relu at a size where a call does real work (tests.test_attacks.LARGER)
LARGER = {"batch_size": 512, "dim": 1024}
# 16 MB: a call of milliseconds, long enough for CPU load beside it to show
HUGE = {"batch_size": 4096, "dim": 1024}
# How far one honest kernel's speedup moved between runs on this VM (9.4 to 12.5 for a
# ReLU against tasks/redteam6/relu_twice, 1.33 apart; 9.2 and 11.2 in later runs): a
# control compared across runs gets this much. The holes these tests were written for
# gained 2x to 9x.
RUN_SPREAD = 1.4


def request(name, task, language="python", options=None, request_id=None, **task_fields):
    opts = {"trials": 2, "timing": {"enabled": True}}
    opts.update(options or {})
    return client.request(request_id or name, "run", task, "redteam6/" + name, language=language,
                          options=opts, limits={"timeout_s": TIMEOUT_S}, **task_fields)


def run(name, task, language="python", options=None, server=None, request_id=None, **task_fields):
    own = server is None
    server = server or client.Server(mode="fork", max_children=2)
    try:
        req = request(name, task, language, options, request_id, **task_fields)
        response = server.ask(req, timeout=TIMEOUT_S + 200)[req["id"]]
    finally:
        if own:
            server.close()
    show(name, task, response)
    print(response.get("log_tail", "")[-1500:], flush=True)
    return response


class _Asserts(unittest.TestCase):
    def assert_no_gain(self, response):
        self.assertNotIn(response.get("error_class"), NOT_THE_CANDIDATES, response)
        if response["status"] == "pass":
            self.assertLessEqual(response["metrics"]["speedup"], NO_GAIN, response)
        else:
            self.assertEqual(response["status"], "fail", response)

    def assert_caught(self, response, error_class="cheat_detected"):
        self.assertEqual((response["status"], response.get("error_class")), ("fail", error_class),
                         response)


class PublishTest(_Asserts):
    """Item 1: the next call's inputs known before its bracket opens."""

    def test_inputs_memoised_and_the_other_slot_read(self):
        response = run("memo_and_probe", "relu", sizes=LARGER)
        self.assert_no_gain(response)
        self.assertIn("memo_hits': 0", response.get("log_tail", ""), response.get("log_tail"))
        self.assertIn("other_slot_new': 0", response.get("log_tail", ""), response.get("log_tail"))


class TakeTest(_Asserts):
    """Item 2: work around the report and the task host's copy of the outputs."""

    # HOLE at 94b2514: at 16 MB (HUGE) status pass, flags ['speedup_confirmed'], speedup
    # 3.01, 9.32, 9.85 in three runs (the second: candidate_ms 0.1525 of which
    # timing_charged_ms 0.1132, reference_ms 1.422, timing_gap_ms 4.488, reference_gap_ms
    # 4.624, timing_measured_again 1). At 2 MB (LARGER) 1.53, 1.85, 2.18, 1.90 and once
    # 1.0 (charged up to the reference's median). The candidate's
    # true work per call is the reference's (one pass over 2 MB); the server's clock
    # credits it with the copy the reference's loop pays in the child's hand-over
    # (timing_plan.charged subtracts the reference's gap, which holds that copy, and the
    # candidate replaced the copy with its own work).
    # An OPEN hole (README "What it does not protect": the hand-over's copy runs in the
    # candidate's process). Whether it gains in a given run depends on the two loops'
    # gaps: 1.003 in a later run (charged 1.708 ms, timing_gap_ms 6.528 against
    # reference_gap_ms 5.452). So the test holds only what must always hold, the
    # candidate's verdict and never the harness's, and prints what it got.
    # Closed on the CPU after (2026-11-27, seventh session): the task host reads a timed
    # call's outputs out of the stopped child (handover/read.py), so no copy is left to
    # fuse with; the candidate now does its ReLU in the hand-over into a tensor of its
    # own, and the clock charges it (1.0, timing_charged_ms 1.883). Where a machine does
    # not allow the read (and on a GPU) the hole stays, and only the party is held.
    def test_the_work_fused_into_a_replaced_hand_over(self):
        response = run("handover_fused", "relu", sizes=HUGE)
        self.assertNotIn(response.get("error_class"), NOT_THE_CANDIDATES, response)
        if outputs_read.available() is None:
            self.assert_no_gain(response)

    def test_the_work_finished_by_a_thread_racing_the_take(self):
        # Defended at 94b2514 with the race alone (SYNC_SHARE 0): cheat_detected at 2 MB
        # (524288 elements not written, timed call 7) and three times at 16 MB (21240,
        # 1870848 and 622672 elements not written, timed call 4 each): the host's copy
        # overtook the worker, sometimes by little. With SYNC_SHARE 3/4 (the hand-over
        # itself writing 3/4, handover_fused's hole) 16 MB gave cheat_detected twice
        # (the worker's whole quarter unwritten) and once a pass at 1.39 confirmed
        # (candidate_ms 1.324 of which timing_charged_ms 1.278, reference_ms 1.842).
        response = run("report_racing_take", "relu", sizes=HUGE)
        self.assert_no_gain(response)

    # HOLE at 94b2514 (no harness code touched, L1-clean torch): status pass, flags
    # ['speedup_confirmed'], speedup 2.30, candidate_ms 2.125 (timing_charged_ms 1.666 of
    # it), reference_ms 4.891, timing_gap_ms 3.309, reference_gap_ms 2.140,
    # timing_measured_again 1. The transpose runs in the hand-over's copy_ of a strided
    # plain tensor, outside the events; the clock charges only what exceeds the
    # reference's gap (which holds a plain copy).
    # Closed after: a timed call's outputs are made dense inside its clock
    # (timing.Clock.settle), so the transpose is the call's time.
    def test_a_transpose_left_to_the_hand_over_in_a_strided_plain_tensor(self):
        # Both pass, their times printed; no bound between them holds on the 2-core VM
        # (see test_attacks_redteam7.SettleTest._against_control): that settling is timed
        # is held by test_timing.SettleTest.
        times = {}
        for path in ("redteam7/scale_transpose_honest", "redteam6/lazy_transposed_view"):
            req = client.request(path.replace("/", "-"), "run", "redteam6/scale_transpose", path,
                                 language="python", options={"trials": 2, "timing": {"enabled": True}},
                                 limits={"timeout_s": TIMEOUT_S})
            server = client.Server(mode="fork", max_children=2)
            try:
                response = server.ask(req, timeout=TIMEOUT_S + 200)[req["id"]]
            finally:
                server.close()
            show(path, "redteam6/scale_transpose", response)
            self.assertEqual(response["status"], "pass", response)
            times[path] = response["metrics"]["candidate_ms"]
        print(f"\ncandidate_ms: {times}", flush=True)


    # HOLE at 94b2514, the same as a cpp candidate, against an honest C++ kernel that
    # writes the transpose itself: lazy_transposed_view_cpp 2.78, 6.89, 7.21, 8.67 (all
    # speedup_confirmed; e.g. candidate_ms 0.691 of which timing_charged_ms 0.311,
    # reference_ms 4.98, timing_gap_ms 2.27 against reference_gap_ms 2.15) against the
    # control's 1.32 and 1.0 in interleaved runs. L1 passes it (status pass).
    # Closed after: the same (timing.Clock.settle).
    def test_a_transpose_left_to_the_hand_over_by_a_cpp_candidate(self):
        times = {}  # printed only (see the test above)
        for name in ("scale_transpose_cpp_honest", "lazy_transposed_view_cpp"):
            response = run(name, "redteam6/scale_transpose", language="cpp")
            self.assertEqual(response["status"], "pass", response)
            times[name] = response["metrics"]["candidate_ms"]
        print(f"\ncandidate_ms: {times}", flush=True)

    def test_a_negation_left_to_the_hand_over_in_a_tensors_negative_bit(self):
        # Not clear at 94b2514 (the same class as the transpose, through torch._neg_view):
        # speedups of lazy_negation 7.67, 8.95, 8.32, 3.96 against the honest control's
        # (relu then neg_ in place) 6.93, 4.04 in interleaved runs; the negation is a cheap
        # pass beside this reference's two 16 MB allocations, and the clock charged up to
        # 2.2 ms in some runs.
        times = {}  # printed only (see the transpose tests)
        for name in ("negation_in_place_honest", "lazy_negation"):
            response = run(name, "redteam6/negated_relu")
            self.assertEqual(response["status"], "pass", response)
            times[name] = response["metrics"]["candidate_ms"]
        print(f"\ncandidate_ms: {times}", flush=True)


class ConfirmationTest(_Asserts):
    """Item 3: the reference timed anew for the confirmation."""

    def _hogs_against_control(self, server_python=None, task="redteam6/relu_twice",
                              control="relu_once_cpp", attack="confirm_reference_hogged_by_timer"):
        """The honest C++ kernel alone, then the same kernel with the hogs and the timers,
        each in a fresh server (tasks/redteam6/relu_twice: about 12x honestly here)."""
        kwargs = {"python": server_python} if server_python else {}
        speedups = {}
        # The control before and after the attack, the larger counting: in full ctest runs
        # the first server's candidate measured half its speed (controls 5.65 and 5.51
        # against the attack's 11.4 and 11.2; 10.0 and 9.4 run alone).
        for name in (control, attack, control + " again"):
            server = client.Server(mode="fork", max_children=2, **kwargs)
            try:
                print(f"\nfreezer: {server.ready.get('environment', {}).get('freezer')}", flush=True)
                response = run(name.split()[0], task, language="cpp", server=server)
            finally:
                server.close()
            if name == attack and response["status"] == "fail":
                # Since the candidate is frozen while the reference is timed: its
                # processes ran then (continued by their timers), which is the cheat.
                self.assertEqual(response["error_class"], "cheat_detected", response)
                self.assertIn("while the reference was timed", response["message"])
                return
            self.assertEqual(response["status"], "pass", response)
            speedups[name] = response["metrics"]["speedup"]
        print(f"\nspeedups: {speedups}", flush=True)
        control_speedup = max(speedups[control], speedups[control + " again"])
        self.assertLessEqual(speedups[attack], control_speedup * RUN_SPREAD, speedups)

    def test_a_compute_bound_reference_beside_timer_continued_hogs(self):
        # Under the signal freezer, against matmul_eightfold (370-470 ms a call). Seen at
        # 94b2514: the hogs (two threads spinning on the ALU) ran through the whole
        # confirmation reference loop (1464 rounds, 11.9 s of the candidate's ticker,
        # 85 SIGCONT handled), undetected; yet the reference was not slowed
        # (confirm_reference_ms 379.3 against the control's 371.5; speedup 7.81 against
        # 8.01). Why the hogs did not slow it is not established (they got little CPU:
        # about 120 rounds of ~3 ms a second for the two; a guess, unverified: the
        # scheduler's per-session groups share the 2 cores between the sandboxes, and the
        # reference's matmul uses one of them).
        self._hogs_against_control(
            os.path.join(client.DATA, "candidates", "redteam6", "signal_freezer_python.sh"),
            task="redteam6/matmul_eightfold", control="matmul_timer_control",
            attack="matmul_hogged_by_timer")

    def test_both_reference_loops_slowed_by_hogs_continued_by_timers(self):
        # This VM's server freezes with cgroup v2: the timers' SIGCONTs were queued and
        # handled only when the server thawed the process for its confirmation loop
        # (the candidate's log: 23 SIGCONT handled, all at the thaw; 0 hog rounds while
        # the reference was timed anew). The first reference is slowed by the hogs (its
        # child runs unfrozen then), the confirmation's is not.
        self._hogs_against_control()

    def test_both_reference_loops_slowed_under_the_signal_freezer(self):
        # The same candidate where the server freezes by signals (a host without cgroup
        # v2, simulated by signal_freezer_python.sh). Mechanism seen at 94b2514: the
        # timers continued the stopped process and the hogs ran 2.4 s (1036 rounds of
        # 32 MB) while the reference was timed anew for the confirmation; nothing
        # looked (procs.still_frozen is checked only before the candidate's next call).
        # Gain seen: small on this reference (page-fault and memory bound): reference
        # 23.9 / 25.5 ms (first / confirmation) against 19.7 / 20.8 ms beside the
        # control; speedup 12.92 against the control's 12.54.
        self._hogs_against_control(os.path.join(client.DATA, "candidates", "redteam6",
                                                "signal_freezer_python.sh"))

    def test_a_cheat_in_the_first_loop_only(self):
        # Defended at 94b2514: the honest confirmation loop counts (speedup_confirmed):
        # 1.101 and 0.865 at 16 MB; at 2 MB 0.848, 0.863, 0.875 (confirmed), and twice 1.0
        # without a confirmation (the first loop charged up to the reference). An honest
        # ReLU's own speedup moves this much between runs here, hence RUN_SPREAD.
        response = run("fused_in_first_loop_only", "relu", sizes=HUGE)
        self.assertEqual(response["status"], "pass", response)
        self.assertLessEqual(response["metrics"]["speedup"], RUN_SPREAD, response)

    def test_kernel_writeback_left_behind_for_the_confirmation(self):
        # No gain seen at 94b2514 (1 GB dirtied in 1.89 s in the last call of the first
        # loop): speedup 10.86 against the control's 9.38; confirm_reference_ms 16.46
        # against the control's 19.63 (run-to-run spread of these numbers here: 15%).
        # Both in one server, judged against the same first reference record: in servers
        # of their own (as before) a full ctest run saw 11.86 against the control's 8.18,
        # the two references timed apart.
        speedups = {}
        server = client.Server(mode="fork", max_children=2)
        try:
            # The control before and after (the larger counts): see _hogs_against_control
            # (full ctest runs: 6.55 and 4.71 first, against the attack's 10.4 and 11.9).
            for name in ("relu_once_honest", "writeback_left_behind", "relu_once_honest again"):
                response = run(name.split()[0], "redteam6/relu_twice", server=server)
                self.assertEqual(response["status"], "pass", response)
                speedups[name] = response["metrics"]["speedup"]
        finally:
            server.close()
        print(f"\nspeedups: {speedups}", flush=True)
        control = max(speedups["relu_once_honest"], speedups["relu_once_honest again"])
        self.assertLessEqual(speedups["writeback_left_behind"], control * RUN_SPREAD, speedups)

    # Defended here: a relu call of 0.27 ms gets the CPU beside the hogs (the woken
    # reference child preempts them): honest alone 0.200, the hog 0.157, honest after it
    # 0.098 (reference_ms 0.270 and 0.268).
    def test_a_slow_candidate_below_the_confirmation_threshold_slows_the_reference(self):
        honest = run("slow_relu_honest", "relu", sizes=LARGER)
        self.assertEqual(honest["status"], "pass", honest)
        worth = honest["metrics"]["speedup"]
        server = client.Server(mode="fork", max_children=2)
        try:
            hog = run("slow_relu_hogs_first_reference", "relu", sizes=LARGER, server=server)
            # The next candidate of the task, honest, judged against the record kept.
            after = run("slow_relu_honest", "relu", sizes=LARGER, server=server,
                        request_id="slow_relu_honest-after-the-hog")
        finally:
            server.close()
        print(f"\nhonest alone {worth:.3g}; the hog {hog['metrics'].get('speedup')}; "
              f"honest after the hog {after['metrics'].get('speedup')}", flush=True)
        # The hog and the honest candidate after it are judged against the same stored
        # reference record (seen: 0.211 and 0.159, the slow kernel's own spread): a gross
        # gain (twice) only. The honest one alone ran in a
        # server of its own, against a reference timed there: on the 2-core VM that moved
        # 0.133 to 0.26 for the same kernel, so it bounds only a gross slowdown.
        # The honest kernel's own speed moves from loop to loop here (seen: 0.12 after the
        # hog against 0.26 for the hog, in a full ctest run), so the hog is held to twice
        # the better of the two honest measurements.
        if hog["status"] == "fail":  # frozen while the reference is timed: its hogs ran then
            self.assertEqual(hog["error_class"], "cheat_detected", hog)
        else:
            self.assertLessEqual(hog["metrics"]["speedup"], max(after["metrics"]["speedup"], worth) * 2, hog)
        self.assertLessEqual(after["metrics"]["speedup"], worth * 2.5, after)


class ReportedTimeTest(_Asserts):
    """The server's clock bounding what the child reports (timing_plan.charged)."""

    # HOLE at 94b2514: the honest slow kernel alone: speedup 0.261 (and 0.200 in
    # ConfirmationTest's control). The same kernel reporting a microsecond per call:
    # status pass, speedup 1 exactly, twice: candidate_ms 0.2933 = reference_ms
    # (timing_charged_ms 0.2923), timing_measured_again 1, no flag; and candidate_ms 0.243 =
    # reference_ms, flags ['timing_by_clock'] ("the server's clock saw 4.303 ms per timed
    # call (median), 3.91 ms more than the candidate's own 0.001 ms ..."). charged() raises
    # the report to the clock's time but never above the reference's median, and 1.0 is
    # not above confirm_speedup: nothing measures it again.
    # Closed after: beyond the reference's median, charged() counts what the clock
    # vouches for less the gap bound's allowance for load.
    def test_a_slow_candidate_that_reports_a_microsecond(self):
        honest = run("slow_relu_honest", "relu", sizes=LARGER)
        forged = run("slow_relu_forged_time", "relu", sizes=LARGER)
        self.assertEqual(forged["status"], "pass", forged)
        # Not rounded up to the reference's speed (the hole gave 1.0): the honest kernel
        # is 0.15 to 0.26 of the reference in runs seen, the forged one after the fix
        # 0.26 (charged what the clock saw less its allowance, which load widens).
        self.assertLessEqual(forged["metrics"]["speedup"], 0.5, (honest["metrics"]["speedup"], forged))


class BlameTest(_Asserts):
    """Item 6: who pays for what."""

    # HOLE (blame) at 94b2514: an honest candidate (x @ w once, 60-80 ms a call here)
    # of a task whose reference computes it eight times over (365-650 ms a call):
    # timeout_s 15: status fail, error_class timeout, "wall-clock limit of 15 s hit
    # during candidate timing; the child's process group was killed" (child_seconds
    # 19.0). With timeout_s 30 it passed (speedup 5.75, child_seconds 32.3, timing_seconds
    # 30.5) and with 60 (7.40, child_seconds 50.5). Its own work is 2 trials and 46 timed
    # calls (about 4 s with the freezes); the rest of the wall clock is the reference's
    # two timing loops (23 calls of 0.4-0.6 s each, in another child: the first after its
    # trials, the confirmation's), which the candidate child's deadline does not exclude
    # (server.py extends it only by its own waits for the task host, _host_answer).
    # Closed after: the candidate is frozen while the reference is timed, and that wait
    # extends its deadline (server._start_loop).
    def test_the_references_timing_is_charged_to_the_candidates_time_limit(self):
        req = request("matmul_once_honest", "redteam6/matmul_eightfold")
        # Its own work (2 trials, 46 timed calls) takes about 4 s alone; the reference's
        # two loops about 23 s: over this limit only if they count against it.
        req["limits"]["timeout_s"] = 20
        server = client.Server(mode="fork", max_children=2)
        try:
            response = server.ask(req, timeout=TIMEOUT_S + 200)[req["id"]]
        finally:
            server.close()
        show("matmul_once_honest", "redteam6/matmul_eightfold", response)
        self.assertEqual(response["status"], "pass", response)


class StaticCheckTest(_Asserts):
    """L1 (the `check` action) on the python candidates that reach a pass above: each
    imports the harness's own modules and rebinds a class attribute of the child
    (CandidateChild._hand_over, CandidateChild._inputs) or a module global
    (reporter.json). L1 is a first filter only, but nothing a kernel needs imports
    kforge_harness."""

    # At 94b2514 L1 passed all three (status pass, no findings); the cpp candidate
    # confirm_reference_hogged_by_timer was rejected (import-not-allowed: json ...;
    # native-thread), so L1 does read imports, per language.
    # Closed after: rules/default.yaml's harness-import (every language).
    def test_candidates_that_import_the_harness_and_rebind_its_child(self):
        server = client.Server(mode="fork", max_children=1)
        try:
            requests = [client.request(name, "check", task, "redteam6/" + name, language="python")
                        for name, task in (("handover_fused", "relu"),
                                           ("slow_relu_forged_time", "relu"),
                                           ("memo_nudged", "redteam5/matmul"))]
            responses = server.ask(*requests, timeout=300)
        finally:
            server.close()
        verdicts = {name: (r["status"], r.get("error_class")) for name, r in responses.items()}
        print(f"\nL1: {verdicts}", flush=True)
        for name, verdict in verdicts.items():
            self.assertEqual(verdict, ("fail", "checker_rejected"), (name, responses[name]))


class TrimmedOverheadTest(_Asserts):
    def test_the_childs_harness_overhead_trimmed_and_the_report_cut(self):
        # No gain at 94b2514 (relu 64 x 256): speedup 1 exactly twice (candidate_ms 0.0227 =
        # reference_ms, timing_charged_ms 0.0201; timing_gap_ms 0.282 against
        # reference_gap_ms 0.227): the candidate's gap stayed above the reference's even
        # with the layouts parsed once (its process pays the audit hook, the reference's
        # child runs unguarded). The 1.0 itself is ReportedTimeTest's cap: an honest
        # ReLU here measures about 0.85 (fused_in_first_loop_only's confirmation loop).
        # Seen later (a full ctest, main at fd63464): speedup 9.73, confirmed, charged
        # nothing (timing_gap_ms 0.203 against reference_gap_ms 0.278): the child-side
        # overhead it trimmed (0.075 ms a call) exceeds the whole reference (0.031 ms).
        # The same open hole as test_the_work_fused_into_a_replaced_hand_over (harness
        # code in the candidate's process replaced; README "What it does not protect"):
        # whether it gains depends on the two loops' gaps from run to run, so this test
        # holds only what must always hold: the candidate's verdict, never the harness's.
        response = run("overhead_trimmed", "relu")
        self.assertNotIn(response.get("error_class"), NOT_THE_CANDIDATES, response)


class SpotCheckTest(_Asserts):
    """Item 5: telling checked calls from unchecked ones."""

    def test_a_memo_moved_by_an_ulp_escapes_the_repeat_rule(self):
        self.assert_caught(run("memo_nudged", "redteam5/matmul"))

    def test_checks_read_after_the_fact_from_the_frozen_interval(self):
        self.assert_no_gain(run("check_side_channel", "redteam5/matmul"))


if __name__ == "__main__":
    unittest.main()
