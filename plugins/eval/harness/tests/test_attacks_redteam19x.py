"""redteam19x (helper): the timing boundary after 5b692a6, where a call's numbers go
with its command and values laid out whole are made from PUBLIC_SEED in the
preparation. Each test asserts the SECURE outcome; a test that fails is a hole. Run them
one by one by name on the shared VM. A control is its attack's file with one line
replaced (VARIANTS): the same loop reporting its time as measured, the same escapes
without the guard's tables emptied.

Seen on the shared 2-core VM before the fixes:
- MadeNotWholeTest (relu_ns: x and scale in a types.SimpleNamespace, a C type, so the
  value is "made" but never "whole"): the reference's child makes every input from the
  call's seed in the bracket (randn of x: reference_harness_ms 28-76 ms, refunded whole
  as inputs_ms), a loop of its own reads x from the slot and scale from the command and
  reports 0.02 ms: HOLE, pass at 582x and 1268x, timing_charged_ms 0; the same loop
  reporting its measured time 2.35x and 1.43x; an honest ModelNew 1.12x and 0.84x.
  Again through this test: 633.9x, controls 2.46x and 2.61x.
- DtypeArgumentTest (relu_to_dtype: x and a torch.dtype, as kernels often take one; a
  dtype is no value a layout describes, a made node without parts): the same loop,
  the dtype made once from seed 0 in the first preparation: HOLE, pass at 168x and 161x,
  charged 0; its control 1.98x; honest 0.74x and 1.0. Again through this test:
  144.1x, controls 0.85x (3.88 and 3.40 ms).
- RowScalesTest (relu_rowscales: x and a plain Python list of 2048 row scales, more
  than MAX_INLINE_VALUES, so the list is made in the child from the call's seed, x's
  randn with it): a loop of its own that uses every input, drawing only the scales again
  from the call's seed (torch.rand on a generator of its own) and reading x from the
  slot, its report cut to 0.02 ms: HOLE, pass at 678.4x and 677.7x, charged 0, 6 and 7
  spot checks passed, no flag; the same loop reporting its measured time 2.10x and
  2.26x; an honest ModelNew 0.995x.
- GuardSealTest: guards.install() copies the module's globals shallowly, so _INTERNALS
  and _ACTIONS are the very set and dict the sealed hook reads; a candidate that empties
  them from the module takes frames, walks gc, execs a string and calls ctypes, and
  passes (its control, the same file without the emptying: cheat_detected).
- prepare_probe (honest outputs, the harness's own loop wrapped): over 46 timed calls on
  relu_rowscales no call's x was in either slot in any earlier preparation, and the
  prepare command held inputs, layouts_unchanged, output, prepare, read and slot only.

After the fixes (main, the same VM): making inputs in the bracket is refunded no more
than the harness's other work (timing_plan.refunded_gap), the verdict flagged
inputs_made_in_call: red team 18's held_lean_liar on relu_ns 1.08x, rowscales_lean_liar 1.61x against its control's 2.53x and 1.22x
(charged 7.5 ms), dtype_lean_liar 1.0 (charged 3.4 ms), controls 0.95 and 1.0. The
guard's tables and builtins are copies the module does not hold (guards.install):
guard_unsealed cheat_detected at its first escape. The lean loops are judged against
their controls with red team 18's LEAN_OVER_CONTROL: in CI (ctest -j2, 2 cores) the
SimpleNamespace liar was charged 6.90 ms against controls of 7.99 and 8.55 ms, a 15%
swing between loops of the same code, where the holes were 144x to 1268x."""


import unittest

from tests import client
from tests.test_attacks_forged import show
from tests.test_attacks_redteam12 import assert_no_gain_over
from tests.test_attacks_redteam18 import LEAN_OVER_CONTROL

VARIANTS = {
    "redteam19x/ns_lean_control": ("redteam18/held_lean_liar", "LIE_MS = 0.02", "LIE_MS = None"),
    "redteam19x/dtype_lean_control": ("redteam19x/dtype_lean_liar", "LIE_MS = 0.02", "LIE_MS = None"),
    "redteam19x/rowscales_lean_control": ("redteam19x/rowscales_lean_liar", "LIE_MS = 0.02", "LIE_MS = None"),
    "redteam19x/guard_sealed_control": ("redteam19x/guard_unsealed", "UNSEAL = True", "UNSEAL = False"),
}


def _ask(server, candidate, task, timed=True):
    rid = candidate.replace("/", "_")
    file, line, replacement = VARIANTS.get(candidate, (candidate, None, None))
    request = client.request(rid, "run", task, file, language="python", limits={"timeout_s": 300},
                             options={"trials": 2, "timing": {"enabled": timed}})
    if line is not None:
        code = request["candidate"]["code"]
        assert line in code, (file, line)
        request["candidate"]["code"] = code.replace(line, replacement)
    response = server.ask(request, timeout=900)[rid]
    show(candidate, task, response)
    return response


class MadeNotWholeTest(client.SharedServerTest):
    MAX_CHILDREN = 1

    def test_lean_loop_skipping_the_making_gains_nothing(self):
        # Red team 18's loop (x from the slot, scale from the command, 0.02 ms reported)
        # fits a SimpleNamespace as it fits Held: it reads .x and .scale.
        assert_no_gain_over(self, lambda name: _ask(self.server, name, "redteam19x/relu_ns"),
                            "redteam19x/ns_lean_control", "redteam18/held_lean_liar", LEAN_OVER_CONTROL)


class DtypeArgumentTest(client.SharedServerTest):
    MAX_CHILDREN = 1

    def test_lean_loop_skipping_the_making_gains_nothing(self):
        assert_no_gain_over(self, lambda name: _ask(self.server, name, "redteam19x/relu_to_dtype"),
                            "redteam19x/dtype_lean_control", "redteam19x/dtype_lean_liar", LEAN_OVER_CONTROL)


class RowScalesTest(client.SharedServerTest):
    MAX_CHILDREN = 1

    def test_lean_loop_making_only_what_it_uses_gains_nothing(self):
        assert_no_gain_over(self, lambda name: _ask(self.server, name, "redteam19x/relu_rowscales"),
                            "redteam19x/rowscales_lean_control", "redteam19x/rowscales_lean_liar", LEAN_OVER_CONTROL)


class PreparationTest(client.SharedServerTest):
    MAX_CHILDREN = 1

    def test_no_call_is_in_a_slot_before_its_bracket(self):
        response = _ask(self.server, "redteam19x/prepare_probe", "redteam19x/relu_rowscales")
        said = [line for line in response.get("log_tail", "").splitlines() if line.startswith("RT19X call")]
        print("\n".join(said[-3:]))
        self.assertEqual(response["status"], "pass", response)
        self.assertTrue(said, response.get("log_tail"))  # the probe ran in the timed calls
        self.assertIn(" ahead 0 ", said[-1])  # its count over every timed call so far


class GuardSealTest(client.SharedServerTest):
    MAX_CHILDREN = 1

    def test_control_is_refused(self):
        response = _ask(self.server, "redteam19x/guard_sealed_control", "relu", timed=False)
        self.assertEqual(response["error_class"], "cheat_detected", response)

    def test_emptied_tables_still_refuse(self):
        response = _ask(self.server, "redteam19x/guard_unsealed", "relu", timed=False)
        self.assertEqual(response["error_class"], "cheat_detected", response)


if __name__ == "__main__":
    unittest.main()
