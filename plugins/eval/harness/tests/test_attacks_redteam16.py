"""redteam16: attacks on the newest protocol parts at 1208a4f (main HEAD): the timed
call's layouts sent only when they change (layouts_unchanged), the merged `step` (take,
checks, next inputs; the spot check drawn at the call's report), the seeding of the
candidate's process, and KFORGE_HARNESS_TRACE. Each test asserts the SECURE outcome; a
test that fails is a hole. Run them one by one, by name (the VM has 2 cores, and the
attack suites' servers cross-talk when run beside each other).

Seen on this VM (2 cores, CPU, cgroup v2 freezer, outputs read out of the child):
- alias_inplace (ReLU in place on the slot's input view, its address reported as the
  output's): caught, cheat_detected at warm-up call 3 (a checked call: input changed).
- stale_half (own output buffer kept across calls, half the rows computed after the
  warm-up, address reported directly): caught, cheat_detected, spot check of timed call 4.
- lean_liar (reference's work, own lean timed call, 0.05 ms reported): speedup 1.0,
  charged 1.874 ms up to the reference's median 1.924 (controls 1.924 / 1.924).
- memory_scan, seeds (native scan of every readable mapping for the run's secret, decimal and
  little-endian): not found (0 mappings, before and after the trials); the model seed,
  the sanity check, found in 1 mapping.
- memory_scan, the trace: its path is found in the child's own memory (the Trace object
  is made before the zygote's fork). In /tmp: not visible in the sandbox (ENOENT).
  Beside the harness (a 0755 directory under the harness's checkout, which the sandbox
  binds read-only): READ by the candidate while the server writes it (12 lines: every
  job's events), not writable (EACCES). HOLE (information only; depends on where the
  operator puts the trace).
- check_oracle: the child's own clock tells which calls were checked (stopped ~25-36 ms
  between calls, ~89-137 ms after a checked one: the step remakes the inputs and runs
  the reference): inferred [3, 10, 16, 20] with timing_spot_checks=5. Known only after
  each call's draw, which is independent of every other: no gain. Not kept as a test;
  the README says it under "What it does not protect".
- inputs made in the child (a list among get_inputs()'s values): the reference's code
  as its own candidate at 0.725x, 0.42x and 0.60x, its inputs' making charged as the
  harness's work beyond max_harness_refund_ms. Fixed after (refunded whole as the
  reference's loop spends it, timing_plan.refunded_gap): 0.70 (a confirmation loop whose
  gap came out 6 ms above the reference's), then 0.92, 1.07, 0.86.
- the trace beside the harness, after the fix (the file 0600, candidates another user):
  not readable.
- honest controls (relu_honest, the reference's code): 0.92x, 1.0, 1.0, 1.0;
  scan_honest 1.0, 0.856x, 0.77x, 1.0, 0.98x, 1.0, 0.916x."""

import os
import shutil
import tempfile
import unittest

from tests import client
from tests.test_attacks_forged import show
from tests.test_attacks_redteam12 import assert_no_gain_over

TASK = "redteam16/relu_big"
SECRET = 0x5EC12E7C0FFEE1  # candidates/redteam16/memory_scan.py looks for it


def _ask(server, candidate, task=TASK, timing=None, seed=None, trials=2):
    options = {"trials": trials, "timing": {"enabled": bool(timing), **(timing or {})}}
    if seed is not None:
        options["seed"] = seed
    language = "cpp" if candidate == "memory_scan" else "python"
    request = client.request(candidate, "run", task, f"redteam16/{candidate}", language=language,
                             limits={"timeout_s": 300}, options=options)
    response = server.ask(request, timeout=900)[candidate]
    show(candidate, task, response)
    return response


class _Timed(client.SharedServerTest):
    MAX_CHILDREN = 1

    def run_timed(self, candidate, **timing):
        return _ask(self.server, candidate, timing={"enabled": True, **timing})


class StaleLayoutsTest(_Timed):
    """The child keeps its views of a slot while the task host says the layouts are
    unchanged; the host judges only what it reads where the child says its outputs lie
    (CPU: handover/read.py). Outputs that alias the inputs or go stale between calls."""

    def test_honest_control(self):
        response = self.run_timed("relu_honest")
        self.assertEqual(response["status"], "pass", response)

    def test_relu_in_place_on_the_input_slot(self):
        """ReLU written over the call's own inputs in the slot, their address reported as
        the output's: no output allocated (16 MB of fresh pages a call)."""
        assert_no_gain_over(self, self.run_timed, "relu_honest", "alias_inplace")

    def test_lean_liar_one_big_output(self):
        """The reference's work in a lean timed call of its own, reporting 0.05 ms."""
        assert_no_gain_over(self, self.run_timed, "relu_honest", "lean_liar")

    def test_cached_output_tensor(self):
        """The reference's work, into one output tensor kept and returned at every call."""
        assert_no_gain_over(self, self.run_timed, "relu_honest", "cached_out")

    def test_half_the_rows_stale(self):
        """After the warm-up, half the rows computed, the rest the last full call's."""
        response = self.run_timed("stale_half")
        self.assertNotEqual(response["status"], "pass", response)
        self.assertEqual(response["error_class"], "cheat_detected", response)


class InputsMadeInTheChildTest(_Timed):
    """A task whose inputs cannot cross by buffer (an object of the task's own among them,
    redteam16/relu_objarg; the red team's list crosses since): every timed call's
    inputs are made in the child from the seed, inside the call's bracket. Not an attack:
    the reference's own code as the candidate. Refunded whole for a while (it was not
    charged), that making let a loop of the candidate's own that skipped it report what
    it liked (red team 19x, 1268x); it is the harness's own work since, refunded up to
    max_harness_refund_ms, and the verdict says so (inputs_made_in_call)."""

    def test_reference_code_as_candidate_is_told_its_inputs_were_made_in_the_call(self):
        response = _ask(self.server, "listarg_honest", task="redteam16/relu_objarg",
                        timing={"enabled": True})
        self.assertEqual(response["status"], "pass", response)
        self.assertGreater(response["metrics"]["reference_inputs_ms"], 1.0, response)
        self.assertIn("inputs_made_in_call", response["flags"], response)


class KbxSeedAndTapeTest(client.SharedServerTest):
    """A kernelbenchx unit whose argument is a list of 60000 floats drawn right after
    seeding (redteam16/coeff_scan): the call's command carries them as a tape of 60000
    JSON nodes, inside the bracket, and the child is given the unit's seed, from which the
    same list can be drawn again."""
    RULE = {"kind": "allclose", "atol": {"float32": 1e-4}, "rtol": {"float32": 1e-4}}

    MAX_CHILDREN = 1

    def run_timed(self, candidate):
        # scan_lean_liar: scan_lean_regen's loop (the call's command read as bytes, its
        # tape never parsed nor decoded, the arguments drawn again from the seed) doing the
        # reference function's work byte for byte and reporting at most 0.05 ms a call.
        file = "scan_lean_regen" if candidate == "scan_lean_liar" else candidate
        request = client.request(candidate, "run", "redteam16/coeff_scan", f"redteam16/{file}",
                                 language="python", task_format="kernelbenchx",
                                 limits={"timeout_s": 300},
                                 options={"rule": self.RULE, "timing": {"enabled": True}})
        if candidate == "scan_lean_liar":
            request["candidate"]["code"] = request["candidate"]["code"].replace(
                'MODE = "regen_tensor"', 'MODE = "reference_forward_liar"')
        response = self.server.ask(request, timeout=900)[candidate]
        show(candidate, "redteam16/coeff_scan", response)
        return response

    def test_arguments_drawn_again_from_the_seed(self):
        """The function ignores its list and draws it again from torch.initial_seed()."""
        assert_no_gain_over(self, self.run_timed, "scan_honest", "scan_regen")

    def test_lean_loop_never_parsing_the_tape(self):
        """Its own loop: the command read as bytes, the seed found by rfind, the arguments
        drawn again as a tensor; honest event times."""
        assert_no_gain_over(self, self.run_timed, "scan_honest", "scan_lean_regen")

    def test_lean_loop_never_parsing_the_tape_reporting_nothing(self):
        """The same loop doing the reference function's work byte for byte, 0.05 ms
        reported: charged what the clock vouches for, less the reference's gap (which
        holds the child's parse of the tape)."""
        assert_no_gain_over(self, self.run_timed, "scan_honest", "scan_lean_liar")


class SecretSeedTest(unittest.TestCase):
    """The run's secret never reaches the candidate's process (seeds.py): looked for in
    its objects and all of its readable memory, before and after its trials."""

    def test_secret_not_in_the_childs_memory(self):
        server = client.Server(mode="fork", max_children=1)
        try:
            response = _ask(server, "memory_scan", seed=SECRET)
        finally:
            server.close()
        log = response.get("log_tail", "")
        print(log[-1500:])
        scans = [line for line in log.splitlines() if line.startswith("RT16SEED")]
        self.assertTrue(scans, log)
        for line in scans:
            self.assertNotIn("'secret_dec': ['", line, line)
            self.assertNotIn("'secret_le': ['", line, line)
            self.assertIn("'secret_dec': 0", line, line)
        # The scan works: the model seed the child holds (torch's generator) is found.
        self.assertRegex(scans[0], r"'model_seed_le': [1-9]", scans[0])


class TraceTest(unittest.TestCase):
    """KFORGE_HARNESS_TRACE: the server's timeline of every job. A candidate learns its
    path (the Trace object is in the zygote's memory); it must not read or write it."""

    def probe(self, trace_dir):
        path = os.path.join(trace_dir, "trace.jsonl")
        server = client.Server(mode="fork", max_children=1,
                               extra_env={"KFORGE_HARNESS_TRACE": path})
        try:
            response = _ask(server, "memory_scan")
        finally:
            server.close()
        log = response.get("log_tail", "")
        print("\n".join(line for line in log.splitlines() if "RT16TRACE" in line))
        with open(path, encoding="utf-8") as handle:
            forged = [line for line in handle if '"forged"' in line]
        return log, forged

    def assert_unreachable(self, log, forged):
        self.assertIn("RT16TRACE hits=", log)
        self.assertNotIn("readable=True", log)
        self.assertNotIn("writable=True", log)
        self.assertEqual(forged, [])

    def test_trace_in_tmp(self):
        trace_dir = tempfile.mkdtemp(prefix="rt16-trace-")
        try:
            self.assert_unreachable(*self.probe(trace_dir))
        finally:
            shutil.rmtree(trace_dir, ignore_errors=True)

    def test_trace_beside_the_harness(self):
        """A trace file kept in the harness's checkout (bench/, say): the sandbox shows
        the harness's directory read-only (it is on sys.path)."""
        trace_dir = tempfile.mkdtemp(prefix="rt16-trace-", dir=client.HARNESS_DIR)
        os.chmod(trace_dir, 0o755)  # as a checkout's directories are
        try:
            self.assert_unreachable(*self.probe(trace_dir))
        finally:
            shutil.rmtree(trace_dir, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
