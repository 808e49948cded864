"""redteam8: attacks on the CPU read hand-over (handover/read.py, the server's
`sandbox_worker`, `_start_loop`, `_loop_called`/`_loop_read`, host.py `take`) through the
real server, each on a timed relu of 16 MB (test_read_handover's HUGE). Each test asserts
what SHOULD happen: a cheat fails as the candidate's or gains nothing beyond NO_GAIN; an
honest candidate passes. A red team (a helper that read the code, not the tests) wrote
them against main at 23dfb0a; the four holes it found are closed (each test says how).
Run them one by one (`-m unittest tests.test_attacks_redteam8.Class.test`): the VM is
noisy."""

import unittest

from kforge_harness.handover import read as outputs_read
from tests import client
from tests.test_attacks import NO_GAIN
from tests.test_attacks_forged import show

NOT_THE_CANDIDATES = ("harness_error", "task_error", "host_error")
HUGE = {"batch_size": 4096, "dim": 1024}
TIMEOUT_S = 240


def run(name, language, task="relu"):
    server = client.Server(mode="fork", max_children=2)
    try:
        req = client.request(name or "reference", "run", task, name and f"redteam8/{name}", language=language,
                             options={"trials": 2, "timing": {"enabled": True}},
                             limits={"timeout_s": TIMEOUT_S}, sizes=HUGE)
        response = server.ask(req, timeout=TIMEOUT_S + 200)[req["id"]]
    finally:
        server.close()
    show(name or "the reference", task, response)
    return response


class ReadMachine(unittest.TestCase):
    """Skips where the machine does not allow the read (outputs cross by the copy)."""

    def setUp(self):
        why = outputs_read.available()
        if why is not None:
            self.skipTest(f"SKIP: outputs cross by the child's copy on this machine: {why}")

    def assert_no_gain(self, response):
        self.assertNotIn(response.get("error_class"), NOT_THE_CANDIDATES, response)
        if response["status"] == "pass":
            self.assertLessEqual(response["metrics"]["speedup"], NO_GAIN, response)


class ReadForcedOffTest(ReadMachine):
    """A cpp candidate clones a sibling with clone(CLONE_PARENT) (not a namespace flag:
    seccomp allows it): the sandbox supervisor then has two non-reaper children,
    sandbox_worker returns None, and the candidate's loop falls back to the child's copy
    into the slot (flag outputs_copied_in_child), while the reference's loop is timed
    through the freeze and the read. The copy is then skipped (ReLU computed into the
    slot by a replaced hand-over, forward returning an empty tensor)."""

    def test_a_forced_copy_hand_over_gains_nothing(self):
        # Seen at 23dfb0a: pass 2.13x, 20.56x, 2.21x (controls 1.0, 1.0, 0.98).
        # Closed after: the worker is found when the child sends its marker, before any
        # candidate code runs (Proc.worker); the sibling cannot change it. Then 1.0.
        self.assert_no_gain(run("downgrade_copy", "cpp"))

    def test_the_sibling_alone_with_an_honest_relu_passes(self):
        response = run("downgrade_honest", "cpp")
        self.assertEqual(response["status"], "pass", response)


class TrimmedHandOverTest(ReadMachine):
    """Work moved out of forward's events into a replaced hand-over, into one output kept
    across calls (no allocation, no free in the bracket): the clock, less the reference
    loop's gap, must still see the ReLU."""

    def test_work_in_hand_over_into_a_kept_output_gains_nothing(self):
        self.assert_no_gain(run("handover_kept", "python"))

    def test_the_same_in_cpp_gains_nothing(self):
        self.assert_no_gain(run("handover_kept_cpp", "cpp"))

    def test_the_same_into_huge_page_advised_memory_gains_nothing(self):
        # Seen at 23dfb0a: 1.28x, 1.84x, 1.43x, 1.0, 1.0, 1.0, 1.46x (the >1 ones confirmed).
        # Why: process_vm_readv of 16 MB out of a stopped process took 4.4 ms (median) from
        # 4 KB pages and 1.75 ms from the same bytes in huge pages (AnonHugePages 16384 kB)
        # on this VM: the read the reference loop's gap holds is 2.7 ms dearer than this
        # candidate's, and with its work outside its events the clock is all that bounds it.
        # Closed after: the bracket closes when the child's processes are all stopped, so
        # the read is outside every loop's clock. Then 0.68 (charged by the clock).
        self.assert_no_gain(run("handover_kept_thp_cpp", "cpp"))

    def test_an_honest_relu_into_a_kept_output_passes(self):
        self.assertEqual(run("persistent_out", "python")["status"], "pass")

    def test_an_honest_cpp_relu_into_a_kept_huge_page_output_passes(self):
        self.assertEqual(run("thp_persistent_cpp", "cpp")["status"], "pass")


class InflatedExchangeTest(unittest.TestCase):
    """redteam8/facts_inflate: each timed call's report carries a dict "facts" of 150k
    integers (any task: the server forwards it to the host as after["report"]). The
    server's re-encoding of it (protocol._for_the_wire walks it in Python) and the host's
    decoding land in the next call's `step` exchange, outside the host's host_ms, which
    the server takes for "what a round trip costs now" and subtracts from that call's
    bracket; the child's own encoding is skipped (protocol.encode replaced in its
    process). The ReLU runs in a replaced hand-over, outside the call's events. Not
    specific to the read hand-over (runs wherever the clock bounds the events)."""

    def test_an_inflated_exchange_buys_no_speedup(self):
        # Seen at 23dfb0a: pass 21.82x, gaps -20.84/-25.88 ms (reference gap 6.94 ms).
        # Closed after: a report's facts go to the host only for a kernelbenchx unit, and
        # never in the exchange that is measured. Then 0.14 (its own flood decoded inside
        # its bracket).
        response = run("facts_inflate", "python")
        self.assertNotIn(response.get("error_class"), NOT_THE_CANDIDATES, response)
        if response["status"] == "pass":
            self.assertLessEqual(response["metrics"]["speedup"], NO_GAIN, response)


    def test_an_honest_candidate_beside_a_flooding_one_passes(self):
        # redteam8/facts_flood: an honest ReLU whose timed reports carry 2.2 MB of facts
        # each (the server stalls a few hundred ms per call re-encoding them), run beside
        # read_handover/clamp_honest. Seen at 23dfb0a: both pass (clamp_honest 1.0x,
        # measured again once; facts_flood's own gap -173 ms).
        server = client.Server(mode="fork", max_children=2)
        try:
            reqs = [client.request(name.replace("/", "-"), "run", "relu", name, language="python",
                                   options={"trials": 2, "timing": {"enabled": True}},
                                   limits={"timeout_s": TIMEOUT_S}, sizes=HUGE)
                    for name in ("redteam8/facts_flood", "read_handover/clamp_honest")]
            got = server.ask(*reqs, timeout=TIMEOUT_S + 200)
        finally:
            server.close()
        for req in reqs:
            show(req["id"], "relu", got[req["id"]])
        honest = got["read_handover-clamp_honest"]
        self.assertEqual(honest["status"], "pass", honest)


class EmptyOutputTest(ReadMachine):
    """redteam8/relu_and_empty: a task whose second output is empty (x[:0] * 2: zero
    elements, data_ptr() 0). The child reports 0 as that output's address, and host.py's
    `_read_outputs` refuses 0 as "not an address", though there is nothing to read. The
    reference's own timing then fails (seen: task_error "the task's reference could not
    be timed: ... reported [1401..., 0] as where its 2 output(s) lie, not an address for
    each"): a valid task blamed, every candidate of it an error. Where the child copies,
    nothing of this happens. Closed after: an empty output's address is not read (0 is
    refused only where there are bytes to read)."""

    def test_the_reference_of_a_task_with_an_empty_output_is_timed(self):
        response = run(None, "python", task="redteam8/relu_and_empty")
        self.assertEqual(response["status"], "pass", response)

    def test_an_honest_candidate_of_it_passes(self):
        response = run("empty_second_honest", "python", task="redteam8/relu_and_empty")
        self.assertEqual(response["status"], "pass", response)


if __name__ == "__main__":
    unittest.main()
