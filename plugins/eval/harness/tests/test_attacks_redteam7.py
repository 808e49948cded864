"""A seventh red team's candidates (tests/data/candidates/redteam7/), written against the
harness at 8782e2f: work deferred past the call's clock into the hand-over without
replacing harness code (timing.Clock.settle), and L1's harness-import rule reached
around. Each test starts its own fork-mode CPU server, prints what it returned, then
asserts what should happen. Each hole found says how it was closed; the open one (the
hand-over, reached through sys.modules) holds only that the verdict is the candidate's.
Numbers are what the server returned on the 2-core VM.

Run one test at a time, by name."""

import unittest

from tests import client
from tests.test_attacks_redteam6 import HUGE, LARGER, TIMEOUT_S, _Asserts
from tests.test_attacks_forged import show


def run(name, task, language="python", options=None, **task_fields):
    opts = {"trials": 2, "timing": {"enabled": True}}
    opts.update(options or {})
    server = client.Server(mode="fork", max_children=2)
    try:
        req = client.request(name, "run", task, "redteam7/" + name, language=language,
                             options=opts, limits={"timeout_s": TIMEOUT_S}, **task_fields)
        response = server.ask(req, timeout=TIMEOUT_S + 200)[req["id"]]
    finally:
        server.close()
    show(name, task, response)
    print(response.get("log_tail", "")[-1500:], flush=True)
    return response


def check(name, task, language="python"):
    server = client.Server(mode="fork", max_children=1)
    try:
        req = client.request(name, "check", task, "redteam7/" + name, language=language)
        response = server.ask(req, timeout=300)[req["id"]]
    finally:
        server.close()
    print(f"\nL1 {name}: {response.get('status')} {response.get('error_class')}", flush=True)
    return response


class SettleTest(_Asserts):
    """Item 1: work left past the end event without replacing harness code."""

    def _against_control(self, name):
        """The attack and the honest control, each passing, their times printed. Neither
        speedups nor times per call can be held against each other here: on the 2-core
        VM this 4 MB task's reference loop moved 2.5 to 7.4 ms from run to run and the
        honest control's own time 1.6 to 7.8 ms, where the holes gave 0.6 to 1.2 ms.
        That settling is timed is held by test_timing.SettleTest (the same process, a
        transpose against none: more than tenfold)."""
        times = {}
        for candidate in ("scale_transpose_honest", name):
            response = run(candidate, "redteam6/scale_transpose")
            self.assertEqual(response["status"], "pass", response)
            times[candidate] = response["metrics"]["candidate_ms"]
        print(f"\ncandidate_ms: {times}", flush=True)

    # Not clear at 8782e2f (the mechanism works, the gain is the wall clock's noise):
    # status pass, max_abs_diff 0 (relu computed by the mode inside the hand-over's
    # copy_, after the end event), speedups 1.0 (candidate_ms 1.643, timing_charged_ms
    # 1.611, timing_gap_ms 5.149 against reference_gap_ms 5.056), 2.438
    # ['speedup_confirmed'] (candidate_ms 0.6866 of which timing_charged_ms 0.6514,
    # reference_ms 1.674), 1.0, 1.0 (charged 1.585, 1.691) against the honest ReLU's
    # 1.02, 0.94 in interleaved runs. Only the server's wall clock (timing_plan.charged)
    # stands between it and redteam6's fused hand-over gains; nothing of the harness is
    # replaced and settle cannot see it (the output is dense).
    def test_relu_done_by_a_dispatch_mode_in_the_hand_overs_copy(self):
        self.assert_no_gain(run("dispatch_mode_copy", "relu", sizes=HUGE))

    # HOLE at 8782e2f: status pass, flags ['speedup_confirmed'], speedup 6.57
    # (candidate_ms 0.737 of which timing_charged_ms 0.341, reference_ms 4.838,
    # timing_gap_ms 2.275 against reference_gap_ms 2.018) and 5.51 (candidate_ms 1.219,
    # reference_ms 6.721), max_abs_diff 0, against scale_transpose_honest's 0.99 and
    # 0.98 in interleaved runs (run by name: 5.31 against 0.99). timing.Clock.settle densifies only `type(out) is
    # torch.Tensor`; candidate._hand_over accepts np.ndarray (_PLAIN) and
    # judge/outputs.as_tensor runs np.ascontiguousarray on it: the transpose, after the
    # end event. Fix: settle what as_tensor would produce (or refuse non-contiguous
    # arrays / convert arrays inside the clock).
    # Closed after: settle makes NumPy arrays C-contiguous inside the clock.
    def test_a_transpose_left_to_the_hand_over_in_a_numpy_array(self):
        self._against_control("lazy_transpose_numpy")

    # HOLE at 8782e2f: status pass, flags ['speedup_confirmed'], speedup 8.53
    # (candidate_ms 0.584 of which timing_charged_ms 0.233, reference_ms 4.980) and 3.35
    # (candidate_ms 1.979, reference_ms 6.633), max_abs_diff 0, against
    # scale_transpose_honest's 1.15 and 0.66 in interleaved runs (run by name: 9.60 against
    # 0.78). settle walks
    # `type(out) is tuple` only; judge/outputs.flat_leaves unpacks every tuple subclass
    # (and list subclass) with tuple's own methods, so the strided view inside reaches
    # the hand-over's copy_. (collections.namedtuple itself is refused at import: it
    # execs a string.) Fix: walk what flat_leaves walks, the same way (isinstance tuple,
    # tuple.__getitem__), and settle into a new plain list rather than in place.
    # Closed after: settle reads tuples as flat_leaves does (tuple's own methods).
    def test_a_transpose_left_to_the_hand_over_in_a_tuple_subclass(self):
        self._against_control("lazy_transpose_namedtuple")

    # HOLE at 8782e2f: status pass, flags ['speedup_confirmed'], speedups 1.886
    # (candidate_ms 2.856 of which timing_charged_ms 0.980, reference_ms 5.386) and
    # 2.111 against scale_transpose_honest's 0.931 in between, max_abs_diff 0. settle
    # writes a list back in place through the list's own __setitem__ (the candidate's),
    # flat_leaves reads it with list.__getitem__. Fix: as for the tuple subclass.
    # Closed after: settle replaces a list's items with list.__setitem__.
    def test_a_transpose_left_to_the_hand_over_in_a_list_subclass(self):
        self._against_control("lazy_transpose_list_subclass")


class StaticCheckTest(_Asserts):
    """Item 5: the harness reached without an import statement L1 sees."""

    # HOLE at 8782e2f: L1 status pass (no findings). For python candidates L1 has only
    # the import rule harness-import; sys.modules["kforge_" + "harness..."] (or
    # importlib.import_module of a built name) reaches the modules the child has already
    # loaded, and the audit hook has no event for it nor for setting a class attribute.
    # Fix: the introspection/sys-use/dynamic-code rules for python candidates too, or
    # a runtime check that CandidateChild's class dict is what it was (L1 is a filter).
    # Closed after: L1's introspection rule applies to every language.
    def test_the_harness_reached_through_sys_modules(self):
        self.assertEqual(check("handover_fused_unimported", "relu")["status"], "fail")

    # HOLE at 8782e2f (redteam6's fused hand-over, unchanged in effect): status pass,
    # speedups 1.335, 4.51 and 1.51 (all ['speedup_confirmed']; e.g. candidate_ms 0.403
    # of which timing_charged_ms 0.362, reference_ms 1.818) against relu_honest's 1.02
    # and 0.94 in interleaved runs, max_abs_diff 0.
    # The open hole of test_attacks_redteam6's fused hand-over, reached without an
    # import: whether it gains depends on the run (see that test), so only the verdict's
    # party is held here.
    def test_the_harness_reached_through_sys_modules_runs(self):
        response = run("handover_fused_unimported", "relu", sizes=HUGE)
        self.assertNotIn(response.get("error_class"), ("harness_error", "task_error", "host_error"),
                         response)


class CppStaticCheckTest(_Asserts):
    """The NumPy transpose as a cpp candidate: L1's output-not-from-kernel rejects it
    (seen at 8782e2f: "forward returns y.numpy().T, which no kernel wrote"; so were
    numpy.asarray(y).T, y.t().numpy(), as_strided over y.numpy(), and
    numpy.frombuffer (numpy-compute)). The run action does not apply L1: run, it passed
    with speedups 4.19 and 5.37 against scale_transpose_cpp_honest's 1.16 and 1.41."""

    def test_the_numpy_transpose_of_a_cpp_candidate_is_rejected(self):
        response = check("lazy_transpose_numpy_cpp", "redteam6/scale_transpose", "cpp")
        self.assertEqual((response["status"], response.get("error_class")),
                         ("fail", "checker_rejected"), response)


class FreezeTest(_Asserts):
    """Items 2 and 3: a process of the candidate's that leaves its parent, under the
    signal freezer (signal_freezer_python.sh of redteam6)."""

    # Not a hole at 8782e2f, but the audit hook was passed: os.fork from the candidate's
    # frame is refused, torch's DataLoader forks from torch's (trusted) frames, and a
    # worker may fork again once it clears its daemon flag. The grandchild (pid 6 in the
    # sandbox) ignored SIGTERM, its parent left by os._exit, it was reparented to pid 1
    # (/usr/bin/cat, the sandbox's) and spun only while the candidate's main process was
    # stopped: it logged "spun 0 rounds of 2 ms while the candidate was stopped" through
    # the whole run (the signal freezer stopped it with the rest of the tree). Speedups
    # 0.976, 1.0, 0.80, 1.0 against relu_honest's 0.967 and 1.0 (same freezer).
    def test_an_orphan_started_through_torchs_dataloader_under_the_signal_freezer(self):
        import os
        sig = os.path.join(client.DATA, "candidates", "redteam6", "signal_freezer_python.sh")
        server = client.Server(mode="fork", max_children=2, python=sig)
        try:
            req = client.request("orphan_through_torch", "run", "relu", "redteam7/orphan_through_torch",
                                 language="python", options={"trials": 2, "timing": {"enabled": True}},
                                 limits={"timeout_s": TIMEOUT_S}, sizes=HUGE)
            response = server.ask(req, timeout=TIMEOUT_S + 200)[req["id"]]
        finally:
            server.close()
        show("orphan_through_torch", "relu", response)
        self.assert_no_gain(response)
        self.assertIn("spun 0 rounds", response.get("log_tail", ""))
