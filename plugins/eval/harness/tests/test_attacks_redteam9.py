"""redteam9: attacks on the CPU read hand-over and the server's clock at c95cb44, through
the real server, each on a timed relu of 16 MB (HUGE). Each test asserts what SHOULD
happen. Run them one by one (`-m unittest tests.test_attacks_redteam9.Class.test`): the
VM is noisy, and the suite's servers must not run beside another suite's."""

import unittest

from tests import client
from tests.test_attacks_forged import show
from tests.test_attacks_redteam8 import HUGE, NOT_THE_CANDIDATES, TIMEOUT_S, ReadMachine


def _request(request_id, name):
    return client.request(request_id, "run", "relu", name, language="python",
                          options={"trials": 2, "timing": {"enabled": True}},
                          limits={"timeout_s": TIMEOUT_S}, sizes=HUGE)


def run(name):
    server = client.Server(mode="fork", max_children=2)
    try:
        req = _request(name.replace("/", "-"), name)
        response = server.ask(req, timeout=TIMEOUT_S + 200)[req["id"]]
    finally:
        server.close()
    show(name, "relu", response)
    return response


class LeanLoopTest(ReadMachine):
    """The candidate replaces CandidateChild._timed_loop (a class attribute) with a lean
    loop: slot views kept per slot, the ReLU into one kept output, no hand-over checks, a
    minimal report with "ms": 0. Its work is the reference's (kept_honest: the same clamp
    into a kept output through the harness's loop measures 1.85-1.89 ms against the
    reference's 1.74-1.89), but the harness code the reference's child runs around each
    call (its gap, refunded by charged()) is not run: the server's clock sees the ReLU
    0.3-0.9 ms shorter than it is. Seen at c95cb44 (13 runs): pass with speedup 1.0 eleven
    times, 1.029 and 1.088 once each (charged up to the reference's median: the clock
    noise, 3 (gap MAD + seen MAD) / sqrt(20), mostly covered the difference); the clock
    (timing_gap_ms - reference_gap_ms, its events saying 0) 1.53 vs reference 1.98 ms,
    1.19 vs 1.74, 1.48 vs 1.70, 1.66 vs 1.92, 1.03 vs 1.75, 1.02 vs 1.93, 1.33 vs 1.62,
    0.71 vs 1.65. With the prepared calls, what the reference's child spent decoding
    each call's command and making its report (0.06 ms, uncounted in its harness_ms) was
    still refunded whole: 1.14x once in CI (the reference's loop noisy, 2.35 ms, and
    2.16 ms confirming). Counted since (candidate.py _timed_call), a loop of its own gains
    at most `max_harness_refund_ms` a call: seen at 1.0 four times of five and at 0.82x.
    README.md "What it does not protect", the child's own harness work per call. (The red team's
    test that the clock sees at least 90% of the ReLU failed at 0.53-0.87 and passed twice
    by noise: it is not kept, being no test that can hold on this VM.)"""

    def test_a_trimmed_loop_gains_nothing(self):
        self.assert_no_gain(run("redteam9/lean_loop"))

    def test_the_control_kept_output_passes(self):
        response = run("redteam9/kept_honest")
        self.assertEqual(response["status"], "pass", response)


class NonDenseOutputTest(ReadMachine):
    """Honest ReLUs whose output is not dense (rows padded to dim + 16; column-major): the
    read hand-over reads data_ptr() for nbytes in memory order, which would judge the
    padding. Not a hole: Clock.settle makes the outputs contiguous inside the call's
    clock. Seen at c95cb44: padded pass 0.49x and 0.36x (the settle's copy is timed as its
    own), column-major pass 0.029x."""

    def test_padded_rows_pass(self):
        self.assertEqual(run("redteam9/padded_honest")["status"], "pass")

    def test_column_major_passes(self):
        self.assertEqual(run("redteam9/strided_honest")["status"], "pass")


class NeighbourLoadTest(ReadMachine):
    """A neighbour job of the same task keeps both cores busy for 20 s while it builds
    (not timed, not frozen), beside an honest job on the same server and task host. Seen
    at c95cb44 (one run): the honest job passed at 0.935x (reference_from_store: the
    reference record timed for the neighbour), the neighbour at 1.0."""

    def test_an_honest_job_beside_a_loaded_neighbour_passes(self):
        server = client.Server(mode="fork", max_children=2)
        try:
            burner = _request("burner", "redteam9/neighbour_burn")
            honest = _request("honest", "read_handover/clamp_honest")
            responses = server.ask(burner, honest, timeout=TIMEOUT_S + 200)
        finally:
            server.close()
        show("clamp_honest", "relu", responses["honest"])
        self.assertEqual(responses["honest"]["status"], "pass", responses["honest"])
        self.assertNotIn(responses["burner"].get("error_class"), NOT_THE_CANDIDATES, responses["burner"])


if __name__ == "__main__":
    unittest.main()
