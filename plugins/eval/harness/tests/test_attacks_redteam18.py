"""redteam18: attacks on the refund of inputs_ms (timing_plan.refunded_gap: the making of
a call's inputs from its seed in the reference's child, refunded whole) and on inputs
nested in containers and objects crossing by buffer (handover/tree.py). Each test
asserts the SECURE outcome; a test that fails is a hole. Run them one by one, by name.

Seen on this VM (2 cores, CPU), at main 0d8a6d6:
- held_lean_liar (relu_held; a loop of its own that makes nothing, report cut to 0.02 ms):
  HOLE. 159.4x, 152.6x, 154.2x, 147.2x, speedup_confirmed, charged 0; controls
  held_lean_honest 0.587/0.666, 0.601/0.623, 0.705/0.727 ms; held_honest (harness loop)
  3.063/3.32 ms. reference_gap_ms 8.2-9.3 (the making of the inputs, refunded whole).
- held_slow_liar (the same, its ReLU 16 times over: ~4.5 ms a call, timing_gap_ms 4.5,
  against the reference's 2.5-2.7 ms): HOLE, 134x and 123.5x.
- scales_lean_liar (relu_manyscales; one number read out of the command's bytes, the
  20000 never decoded): HOLE. 21.4x, 19.1x, 22.1x (capped by the 0.02 ms report), charged
  0; controls scales_lean_honest 0.363/0.396, 0.326/0.376, 0.404/0.395 ms.
- counted_inplace (relu_counted: the reference bumps a counter in a list in place, the
  candidate changes x beside it in place): HOLE. With the forward relu(x) alone: passes,
  1.134x and 1.0x; with relu(x) * 2.0 (two allocations saved): passes 11.5x and 10.81x,
  speedup_confirmed, candidate_ms 0.373/0.519; counted_honest 1.0x (4.188 ms) and
  0.7251x (5.256 ms).
- aliased_honest (relu_aliased: x as input #0 and in input #1's list): timed, task_error
  (the reference's own timing fails its spot check); untimed, the reference's own code as
  the candidate fails numerical_mismatch (blamed for the slot's split of the alias).
- infkey_honest (relu_infkey: a dict keyed by math.inf): timed, task_error ("KeyError:
  inf" in the reference's timing); untimed, the honest candidate fails runtime_error
  KeyError: inf (the key crossed the wire as null).
- relu_dictcycle (a dict that holds itself): task_error, RecursionError in
  observe.tensors_in, reported as "the task fails as its own reference in
  Model.forward": not a hole.

After the fixes (main, the same VM):
- held_lean_liar: no gain, 0.672 ms against its control's 0.717 / 1.237 (the reference's
  gap 8-9 ms -> about 1 ms: Held is laid out whole, made from a public seed in the
  preparation, the call's arguments put together there). held_slow_liar: 1.0,
  timing_by_clock, charged 2.9 ms. (Against the harness's own loop, a test this module
  had, the lean kernel is 3.7x faster honestly: it allocates nothing. Not kept.)
- scales_lean_liar (now on relu_kscales, 1000 numbers; longer lists are made in the
  child): 1.0 and no gain over its control (3.22 against 3.06 / 3.51 ms): the numbers
  came with the preparation then. They come with the call again since (known in the
  preparation, a forward computed from them alone could be computed there, within the
  preparation's allowance), their decoding the harness's own work in the bracket,
  refunded up to max_harness_refund_ms.
- counted_inplace: cheat_detected, "changed input #0[1] in place" (the reference's
  changes told leaf by leaf).
- aliased_honest: passes, timed and untimed (a tensor given twice is one leaf).
- infkey_honest: passes, timed and untimed (keys tagged like inline values).
- relu_dictcycle: the honest candidate passes; inplace_cycle passes flagged
  inputs_unchecked."""

import unittest

from tests import client
from tests.test_attacks_forged import show
from tests.test_attacks_redteam12 import assert_no_gain_over

HELD = "redteam17/relu_held"  # Held(x, scale): made in the child, every part laid out
# A lean loop's charge against its control's: the server's clock of the same loop swung
# by 15% between loops on this VM under ctest -j2 (1.41 against 1.65 and 2.30 ms), more
# than NO_GAIN allows; the holes these tests guard were 154x and 21x, and what the refund
# can still give a loop (max_harness_refund_ms, 0.1 ms a call) is below that swing.
LEAN_OVER_CONTROL = 1.5


# Candidates made of an attack's file by replacing one line of its code: its control (the
# same loop reporting its time as measured) and a slow kernel in the same loop.
VARIANTS = {
    "redteam18/held_lean_honest": ("redteam18/held_lean_liar", "LIE_MS = 0.02", "LIE_MS = None"),
    "redteam18/held_slow_liar": ("redteam18/held_lean_liar", "REPEAT = 1", "REPEAT = 16"),
    "redteam18/scales_lean_honest": ("redteam18/scales_lean_liar", "LIE_MS = 0.02", "LIE_MS = None"),
}


def _ask(server, candidate, task=HELD, timing=None, trials=2):
    options = {"trials": trials, "timing": {"enabled": bool(timing), **(timing or {})}}
    file, line, replacement = VARIANTS.get(candidate, (candidate, None, None))
    request = client.request(candidate.replace("/", "_"), "run", task, file, language="python",
                             limits={"timeout_s": 300}, options=options)
    if line is not None:
        code = request["candidate"]["code"]
        assert line in code, (file, line)
        request["candidate"]["code"] = code.replace(line, replacement)
    response = server.ask(request, timeout=900)[candidate.replace("/", "_")]
    show(candidate, task, response)
    return response


class _Timed(client.SharedServerTest):
    MAX_CHILDREN = 1


class MadeInputsRefundTest(_Timed):
    """A made node whose parts are all laid out: the reference's child made every input
    from the seed (randn of x included) in the bracket, inputs_ms, refunded whole; a loop
    of its own needs none of it (x in the slot, scale in the command). Such a value is
    made from a public seed in the preparation since, and making in the bracket is
    refunded no more than the harness's other work. Its report cut to 0.02 ms must gain
    nothing over the same loop reporting honestly."""

    def test_lean_loop_skipping_the_making_gains_nothing(self):
        assert_no_gain_over(self, lambda name: _ask(self.server, name, timing={"enabled": True}),
                            "redteam18/held_lean_honest", "redteam18/held_lean_liar", LEAN_OVER_CONTROL)


class DecodedValuesRefundTest(_Timed):
    """Numbers drawn with x cross inline (1000 of them: redteam18/relu_kscales; longer
    lists are made in the child since). In every timed call's command, the reference's
    child decodes them all in the bracket: once refunded whole (inputs_ms), the harness's
    own work since, refunded up to max_harness_refund_ms. A loop of its own that reads
    the one number the forward uses out of the line's bytes, its report cut to 0.02 ms,
    must gain nothing over the same loop reporting honestly."""

    def test_lean_loop_skipping_the_decoding_gains_nothing(self):
        assert_no_gain_over(self, lambda name: _ask(self.server, name, task="redteam18/relu_kscales",
                                                    timing={"enabled": True}),
                            "redteam18/scales_lean_honest", "redteam18/scales_lean_liar", LEAN_OVER_CONTROL)


class CycleTest(_Timed):
    """A dict that holds itself beside x: the cycle is a "made" node (handover/tree.py),
    which a forward reaches the child's own made x through. Changing that x in place must
    be caught, or at least the verdict flagged inputs_unchecked."""

    def test_honest_cycle_passes(self):
        response = _ask(self.server, "redteam18/cycle_honest", task="redteam18/relu_dictcycle",
                        timing={"enabled": True})
        self.assertEqual(response["status"], "pass", response)

    def test_inplace_through_a_cycle_is_caught_or_flagged(self):
        response = _ask(self.server, "redteam18/inplace_cycle", task="redteam18/relu_dictcycle",
                        timing={"enabled": True})
        if response["status"] == "pass":
            self.assertIn("inputs_unchecked", response.get("flags", []), response)
        else:
            self.assertEqual(response["error_class"], "cheat_detected", response)


class DictKeyTest(_Timed):
    """Keys that do not cross the wire as they are: an honest candidate must pass, or the
    task be refused as the task's fault, never the candidate's."""

    def test_infinite_key_honest_passes(self):
        response = _ask(self.server, "redteam18/infkey_honest", task="redteam18/relu_infkey",
                        timing={"enabled": True})
        if response["status"] != "pass":
            self.assertNotIn(response["error_class"], ("runtime_error", "wrong_output", "numerical_mismatch", "cheat_detected"),
                             response)


class SiblingOfAChangedLeafTest(_Timed):
    """The reference changes one tensor of a list in place (a counter); the candidate
    changes another of the same list (x, which the reference leaves alone) in place. The
    task host's license is per top-level input (host._mutated_leaves: tree.leaves_of of
    the positions observe saw change), not per leaf."""

    def test_honest_passes(self):
        response = _ask(self.server, "redteam18/counted_honest", task="redteam18/relu_counted",
                        timing={"enabled": True})
        self.assertEqual(response["status"], "pass", response)

    def test_sibling_changed_in_place_is_caught(self):
        response = _ask(self.server, "redteam18/counted_inplace", task="redteam18/relu_counted",
                        timing={"enabled": True})
        self.assertEqual(response["error_class"], "cheat_detected", response)


class AliasedInputsTest(_Timed):
    """The same tensor twice among the inputs (input #0 and inside input #1's list): the
    slot holds each leaf apart, so in the child they are two tensors. The reference's own
    code as the candidate must pass, or the task be refused as the task's; a candidate
    blamed (wrong output, cheat) for the harness's split of an alias is the wrong party."""

    def test_reference_code_is_not_blamed(self):
        response = _ask(self.server, "redteam18/aliased_honest", task="redteam18/relu_aliased",
                        timing={"enabled": True})
        if response["status"] != "pass":
            self.assertNotIn(response["error_class"], ("runtime_error", "wrong_output", "numerical_mismatch", "cheat_detected"),
                             response)

    def test_reference_code_is_not_blamed_untimed(self):
        response = _ask(self.server, "redteam18/aliased_honest", task="redteam18/relu_aliased")
        if response["status"] != "pass":
            self.assertNotIn(response["error_class"], ("runtime_error", "wrong_output", "numerical_mismatch", "cheat_detected"),
                             response)


class DictKeyUntimedTest(_Timed):
    def test_infinite_key_honest_passes_untimed(self):
        response = _ask(self.server, "redteam18/infkey_honest", task="redteam18/relu_infkey")
        if response["status"] != "pass":
            self.assertNotIn(response["error_class"], ("runtime_error", "wrong_output", "numerical_mismatch", "cheat_detected"),
                             response)


class SlowKernelHiddenTest(_Timed):
    """held_lean_liar's loop with its ReLU done 16 times over: a kernel slower than the
    reference's must not be credited a speedup."""

    def test_slow_lean_loop_is_not_faster(self):
        response = _ask(self.server, "redteam18/held_slow_liar", timing={"enabled": True})
        if response["status"] == "pass":
            self.assertLessEqual(response["metrics"]["speedup"], 1.0, response)
