"""redteam16: attacks on the newest protocol parts at 1208a4f (main HEAD): the timed
call's layouts sent only when they change (layouts_unchanged), the merged `step` (take,
checks, next inputs; the spot check drawn at the call's report), the seeding of the
candidate's process, and KFORGE_HARNESS_TRACE. Each test asserts the SECURE outcome; a
test that fails is a hole. Run them one by one, by name (the VM has 2 cores, and the
attack suites' servers cross-talk when run beside each other).

Results seen are in the report of this red team (and the docstrings of the tests)."""

import os
import re
import shutil
import tempfile
import unittest

from tests import client
from tests.test_attacks_forged import show
from tests.test_attacks_redteam12 import assert_no_gain_over

TASK = "redteam16/relu_big"
SECRET = 0x5EC12E7C0FFEE1  # candidates/redteam16/secret_scan.py looks for it


def _ask(server, candidate, task=TASK, timing=None, seed=None, trials=2):
    options = {"trials": trials, "timing": {"enabled": bool(timing), **(timing or {})}}
    if seed is not None:
        options["seed"] = seed
    language = "cpp" if candidate in ("secret_scan", "trace_reader") else "python"
    request = client.request(candidate, "run", task, f"redteam16/{candidate}", language=language,
                             limits={"timeout_s": 300}, options=options)
    response = server.ask(request, timeout=900)[candidate]
    show(candidate, task, response)
    return response


class _Timed(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = client.Server(mode="fork", max_children=1)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

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

    def test_half_the_rows_stale(self):
        """After the warm-up, half the rows computed, the rest the last full call's."""
        response = self.run_timed("stale_half")
        self.assertNotEqual(response["status"], "pass", response)
        self.assertEqual(response["error_class"], "cheat_detected", response)


class SecretSeedTest(unittest.TestCase):
    """The run's secret never reaches the candidate's process (seeds.py): looked for in
    its objects and all of its readable memory, before and after its trials."""

    def test_secret_not_in_the_childs_memory(self):
        server = client.Server(mode="fork", max_children=1)
        try:
            response = _ask(server, "secret_scan", seed=SECRET)
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


class TraceTest(unittest.TestCase):
    """KFORGE_HARNESS_TRACE: the server's timeline of every job. A candidate learns its
    path (the Trace object is in the zygote's memory); it must not read or write it."""

    def probe(self, trace_dir):
        path = os.path.join(trace_dir, "trace.jsonl")
        server = client.Server(mode="fork", max_children=1,
                               extra_env={"KFORGE_HARNESS_TRACE": path})
        try:
            response = _ask(server, "trace_reader")
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


class CheckOracleTest(_Timed):
    """Whether a timed call was checked, read by the child off its own clock (the time it
    is stopped between calls holds the host's step, and a checked call's step remakes its
    inputs and runs the reference). Known only after the draw; the test records how well
    the child knows, and asserts that it cannot (a failure here is the leak, which the
    design says is worth nothing: each call's draw is independent)."""

    def test_child_cannot_tell_checked_calls(self):
        response = self.run_timed("check_oracle")
        self.assertEqual(response["status"], "pass", response)
        log = response.get("log_tail", "")
        lines = [line for line in log.splitlines() if line.startswith("RT16ORACLE")]
        print("\n".join(lines))
        self.assertTrue(lines, log)
        inferred = [int(m) for m in re.findall(r"count=(\d+)", lines[0])]
        # Calls 0..21 are what the child can judge (the last call's step ends the loop);
        # the server counts all 23. Secure: no call's stop stands out (twice the median).
        self.assertEqual(inferred[0], 0, (lines, response["metrics"]["timing_spot_checks"]))
