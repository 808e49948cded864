"""redteam17: attacks on three changes to the timed loop: inputs_ms (the child's report of
the inputs it made, refunded whole as the REFERENCE's loop spends it:
timing_plan.refunded_gap), the within-noise band (server._loop_done: a first loop's
speedup in (1, confirm_speedup] counts as 1.0 unconfirmed), and timed inputs kept as
get_inputs() made them until `publish` (reference/host.py). Each test asserts the SECURE
outcome; a test that fails is a hole. Run them one by one, by name.

Seen on this VM (2 cores, CPU, outputs read out of the child):
- inflated_report (event time cut to 0.05 ms, harness_ms = inputs_ms = 50 ms reported):
  relu_big speedup 1.0, charged 1.861 ms up to the reference's 1.911 (controls 2.118,
  1.911); relu_listarg measured 1.006 -> 1.0 (speedup_within_noise, timing_by_clock,
  charged 21.28 ms; controls 21.87, 21.09). Caught: the refund reads the reference's
  record only.
- band_liar (event time reported 1.5% short): 0.9516 and 0.9056, no unconfirmed
  speedup above 1.
- inplace_child_inputs (timed calls only; file not kept) / inplace_always (relu_listarg: inputs made in the child, the
  forward in place on x): HOLE. 12.68x and 12.66x, speedup_confirmed, charged 0, passes.
  host.after checks a checked call's inputs only where session.layouts[slot] is set
  (never for inputs made in the child), and no trial caught it either.
- listarg_kept_out (inputs untouched, one kept output tensor, no test kept): 7.08x:
  most of that gain is the reference's allocations on this task (its forward ~21 ms,
  fresh pages every call), which an honest kernel may skip. The in-place forward against
  it as control: 2.68 ms against 3.61 / 3.31 (1.24x more, from changing the inputs).
  Kept as a test: the in-place candidate passes where it should be cheat_detected
  (an expected failure, the hole still open).
- After the fix (lists, tuples and dicts of tensors and numbers cross by buffer,
  handover/tree.py): inplace_always on relu_listarg cheat_detected at trial 1 ("changed
  input #0 in place"); the same forward beside an object of the task's own (relu_objarg,
  rows cut to 256 to keep its fresh pages from swamping the loops) still passes, 1.80x:
  the hole narrowed to inputs no layout describes, flagged `inputs_unchecked`.
- Then values no layout describes became "made" nodes (the child makes them from the
  seed and takes the rest from the slot): inplace_always beside the object
  cheat_detected at trial 1 too; a tensor held inside the object (relu_held,
  inplace_held) passes at 3.38x, speedup_confirmed. Then an object's instance
  dictionary was laid out too: relu_held cheat_detected at trial 1 ("input #0.x"), its
  honest control passes; the same tensor in __slots__ (relu_slotted) still passed.
  Then every part Python reads (slots, a list, tuple or dict subclass's items):
  relu_slotted cheat_detected at trial 1; a tensor in a closure (relu_closure,
  inplace_closure) passes at 8.79x, speedup_confirmed: the hole left."""

import unittest

from tests import client
from tests.test_attacks_forged import show
from tests.test_attacks_redteam12 import assert_no_gain_over

RELU = "redteam16/relu_big"
LISTARG = "redteam16/relu_listarg"  # a list among the inputs: crosses by buffer (handover/tree.py)
OBJARG = "redteam16/relu_objarg"  # an object of the task's own among them: made in the child


def _ask(server, candidate, task=RELU, timing=None, trials=2):
    options = {"trials": trials, "timing": {"enabled": bool(timing), **(timing or {})}}
    request = client.request(candidate.replace("/", "_"), "run", task, candidate, language="python",
                             limits={"timeout_s": 300}, options=options)
    response = server.ask(request, timeout=900)[candidate.replace("/", "_")]
    show(candidate, task, response)
    return response


class _Timed(client.SharedServerTest):
    MAX_CHILDREN = 1


class InputsMsReportTest(_Timed):
    """The child reports harness_ms and inputs_ms; Loop.called clamps inputs_ms to
    harness_ms, and refunded_gap reads only the reference's record. A candidate's report
    of both, inflated to 50 ms a call with its event time cut to 0.05 ms, must buy
    nothing."""

    def test_inflated_inputs_ms_buffer_inputs(self):
        assert_no_gain_over(self, lambda name: _ask(self.server, name, timing={"enabled": True}),
                            "redteam16/relu_honest", "redteam17/inflated_report")

    def test_inflated_inputs_ms_inputs_made_in_child(self):
        assert_no_gain_over(self, lambda name: _ask(self.server, name, task=OBJARG,
                                                    timing={"enabled": True}),
                            "redteam16/listarg_honest", "redteam17/inflated_report")


class WithinNoiseBandTest(_Timed):
    """A first loop in (1, confirm_speedup] counts as 1.0. A report shaved 1.5% aims at
    the band; whatever the loops give, a speedup above 1 must come with a confirmation
    loop (flag speedup_confirmed), and one in the band unconfirmed must read 1.0."""

    def test_no_unconfirmed_speedup_above_one(self):
        for _ in range(2):
            response = _ask(self.server, "redteam17/band_liar", timing={"enabled": True})
            self.assertEqual(response["status"], "pass", response)
            metrics, flags = response["metrics"], response.get("flags", [])
            print("speedup", metrics["speedup"], "measured", metrics.get("measured_speedup"),
                  "flags", flags, "charged", metrics.get("timing_charged_ms"), flush=True)
            if metrics["speedup"] > 1.0:
                self.assertIn("speedup_confirmed", flags, response)






class InputsMutatedInPlaceTest(_Timed):
    """inplace_always computes the forward in place on x, in the trials and the timed
    calls alike, x given beside a list of scales (LISTARG) or an object of the task's own
    (OBJARG). x crosses by buffer since (handover/tree.py: the list's numbers inline, the
    object made by the child from the seed), so the task host checks it after every
    trial and checked call; before, the whole input set was made in the child, which
    alone held x, and it passed at 12.7x. A tensor an object holds where Python reads
    it (its instance dictionary, its slots) is laid out too; one in a closure is still
    the child's alone: an OPEN HOLE, README "What it does not protect" (an expected
    failure)."""

    def test_honest_inputs_beside_a_list_pass(self):
        """The list's numbers are drawn anew for every seed: a timed call's travel with
        its command (input_values), put back in the list in the child."""
        response = _ask(self.server, "redteam16/listarg_honest", task=LISTARG, timing={"enabled": True})
        self.assertEqual(response["status"], "pass", response)
        self.assertNotIn("inputs_unchecked", response.get("flags", []), response)

    def test_inputs_beside_a_list_changed_in_place_are_caught(self):
        response = _ask(self.server, "redteam17/inplace_always", task=LISTARG, timing={"enabled": True})
        self.assertEqual(response["error_class"], "cheat_detected", response)
        self.assertIn("input #0", response["message"], response)

    def test_inputs_beside_an_object_are_flagged_unchecked(self):
        response = _ask(self.server, "redteam16/listarg_honest", task=OBJARG, timing={"enabled": True})
        self.assertEqual(response["status"], "pass", response)
        self.assertIn("inputs_unchecked", response.get("flags", []), response)

    def test_thousands_of_numbers_in_a_list_are_made_in_the_call(self):
        """20000 numbers drawn with x: more than MAX_INLINE_VALUES, so the list is made
        in the child from the seed (handover/tree.py), inside the bracket, and the
        verdict says so (inputs_made_in_call): that making is charged as the call's time
        beyond max_harness_refund_ms (refunded whole, a loop of the candidate's own that
        skipped it passed at 678x: red team 19x). Inline, they were decoded in the
        bracket (14 ms on this VM against a 0.5 ms forward), then in the preparation (36
        ms, which load swung between loops by more than the timing's allowance). The
        harness's own walk over the made list once cost 2.5x in the candidate's process
        what it cost in the reference's (every id() an audited event the runtime guards'
        hook heard: 31 ms a call in CI); runner._mapped calls id() on no number since."""
        response = _ask(self.server, "redteam16/listarg_honest", task="redteam17/relu_manyscales",
                        timing={"enabled": True})
        self.assertEqual(response["status"], "pass", response)
        self.assertGreater(response["metrics"]["reference_inputs_ms"], 1.0, response)
        self.assertIn("inputs_made_in_call", response["flags"], response)

    def test_a_thousand_numbers_in_a_list_are_not_charged(self):
        """1000 numbers: inline, with the call, decoded and put back in the bracket as
        the harness's own work (not inputs_ms: nothing is made from the seed), refunded
        up to max_harness_refund_ms. Their decoding costs about 0.3 ms, no more than the
        two loops' noise on this task (its forward 4.5 ms on a loaded 2-core VM, the
        honest charge 0 to 0.25 ms; at 1024 rows, 15 to 23 ms and 0 to 2.7 ms: charged()
        raises a candidate up to the reference's median within that noise): here an
        honest control, charged at most a quarter of the forward. Red team 18's lean loop that skips the decoding gains nothing
        (test_attacks_redteam18 DecodedValuesRefundTest)."""
        def charge():
            response = _ask(self.server, "redteam16/listarg_honest", task="redteam18/relu_kscales",
                            timing={"enabled": True})
            self.assertEqual(response["status"], "pass", response)
            self.assertEqual(response["metrics"]["reference_inputs_ms"], 0.0, response)
            return response["metrics"]["timing_charged_ms"] / response["metrics"]["reference_ms"], response
        # What the harness charges an honest candidate is there every time; load on this
        # VM comes and goes (a ctest run once charged 3.36 ms of a 5.16 ms forward, when
        # alone it was 0.23 and 0.42): the better of two runs.
        share, response = min(charge(), charge(), key=lambda seen: seen[0])
        self.assertLess(share, 0.25, response)

    def test_inputs_beside_an_object_changed_in_place_are_caught(self):
        """The object is made in the child from the seed (a "made" node); x beside it
        lies in the slot."""
        response = _ask(self.server, "redteam17/inplace_always", task=OBJARG, timing={"enabled": True})
        self.assertEqual(response["error_class"], "cheat_detected", response)

    def test_honest_tensor_held_by_an_object_passes(self):
        """The scale is drawn anew for every seed: a timed call's travels with its
        command and is written into the made object with x's view of the slot."""
        response = _ask(self.server, "redteam17/held_honest", task="redteam17/relu_held",
                        timing={"enabled": True})
        self.assertEqual(response["status"], "pass", response)

    def test_a_tensor_held_by_an_object_changed_in_place_is_caught(self):
        """x an attribute of the object: laid out in the slot, written over the made
        object's own in the child."""
        response = _ask(self.server, "redteam17/inplace_held", task="redteam17/relu_held",
                        timing={"enabled": True})
        self.assertEqual(response["error_class"], "cheat_detected", response)
        self.assertIn("input #0.x", response["message"], response)

    def test_a_tensor_in_an_objects_slots_changed_in_place_is_caught(self):
        response = _ask(self.server, "redteam17/inplace_held", task="redteam17/relu_slotted",
                        timing={"enabled": True})
        self.assertEqual(response["error_class"], "cheat_detected", response)

    @unittest.expectedFailure
    def test_a_tensor_in_a_closure_changed_in_place_is_caught(self):
        """x in a closure: made in the child, held by it alone. The OPEN HOLE."""
        response = _ask(self.server, "redteam17/inplace_closure", task="redteam17/relu_closure",
                        timing={"enabled": True})
        self.assertEqual(response["error_class"], "cheat_detected", response)
