"""A timed call's outputs on the CPU read by the task host out of the stopped child
(handover/read.py): the read itself, and candidates that replace the child's hand-over
to skip, forge or outrun it, through the real server."""

import ctypes
import os
import subprocess
import sys
import unittest

from kforge_harness.handover import read as outputs_read
from tests import client
from tests.test_attacks import NO_GAIN
from tests.test_attacks_forged import show

NOT_THE_CANDIDATES = ("harness_error", "task_error", "host_error")
# 16 MB of relu: the copy a child's hand-over makes is as long as the kernel itself.
HUGE = {"batch_size": 4096, "dim": 1024}
TIMEOUT_S = 240

# A process holding known bytes, printing where they lie.
HOLDER = """
import ctypes, sys
data = ctypes.create_string_buffer(b"kforge-outputs" * 1000)
print(ctypes.addressof(data), len(data.raw), flush=True)
sys.stdin.read()
"""


class ReadTest(unittest.TestCase):
    def setUp(self):
        why = outputs_read.available()
        if why is not None:
            self.skipTest(f"SKIP: this machine cannot read another process's memory: {why}")

    def holder(self):
        proc = subprocess.Popen([sys.executable, "-c", HOLDER], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.addCleanup(proc.wait)
        self.addCleanup(proc.stdin.close)
        self.addCleanup(proc.stdout.close)
        address, size = map(int, proc.stdout.readline().split())
        return proc, address, size

    def test_bytes_are_read_where_the_other_process_holds_them(self):
        proc, address, size = self.holder()
        copy = ctypes.create_string_buffer(size)
        outputs_read.read_regions(proc.pid, [(ctypes.addressof(copy), address, size)])
        self.assertEqual(copy.raw[:size - 1], b"kforge-outputs" * 1000)

    def test_an_address_that_holds_nothing_is_a_failed_read(self):
        proc, address, size = self.holder()
        copy = ctypes.create_string_buffer(size)
        for remote in (4096, address + (1 << 46)):
            with self.assertRaises(outputs_read.ReadFailed):
                outputs_read.read_regions(proc.pid, [(ctypes.addressof(copy), remote, size)])


def run(name, task="relu", sizes=HUGE, candidate=None):
    server = client.Server(mode="fork", max_children=2)
    candidate = candidate or (f"read_handover/{name}" if name else None)
    try:
        req = client.request(name or candidate or "reference", "run", task, candidate,
                             language="python", options={"trials": 2, "timing": {"enabled": True}},
                             limits={"timeout_s": TIMEOUT_S}, sizes=sizes)
        response = server.ask(req, timeout=TIMEOUT_S + 200)[req["id"]]
    finally:
        server.close()
    show(name or candidate or "the reference", task, response)
    return response


class HandOverThroughTheServerTest(unittest.TestCase):
    """Each runs one timed relu of 16 MB on the CPU (a minute or two on the 2-core VM)."""

    def setUp(self):
        why = outputs_read.available()
        if why is not None:
            self.skipTest(f"SKIP: outputs cross by the child's copy on this machine: {why}")

    def test_the_reference_as_its_own_candidate_is_timed_through_the_read(self):
        response = run(None)
        self.assertEqual(response["status"], "pass", response)
        self.assertNotIn("outputs_copied_in_child", response["flags"], response)

    def test_work_moved_into_a_replaced_hand_over_is_timed(self):
        # Before the read (the child copying into the slot): 1.5x to 9.8x at this size,
        # the copy the reference's loop pays refunded to a candidate that skipped it.
        response = run("work_in_hand_over")
        self.assertNotIn(response.get("error_class"), NOT_THE_CANDIDATES, response)
        if response["status"] == "pass":
            self.assertLessEqual(response["metrics"]["speedup"], NO_GAIN, response)

    def test_the_same_work_done_in_forward_passes(self):
        # work_in_hand_over's control: its clamp, in forward.
        self.assertEqual(run("clamp_honest")["status"], "pass")

    def test_forged_addresses_are_the_candidates_failure(self):
        response = run("addresses_forged")
        self.assertEqual((response["status"], response["error_class"]), ("fail", "cheat_detected"), response)
        self.assertIn("could not be read where its process said they lie", response["message"])

    def test_a_machine_that_forbids_the_read_falls_back_to_the_childs_copy_and_says_so(self):
        # The reference's own timing child cannot be read (the task makes it so): the
        # server copies from then on, starts that loop again, and the verdict says so.
        response = run(None, task="unreadable_outputs", sizes=None)
        self.assertEqual(response["status"], "pass", response)
        self.assertIn("outputs_copied_in_child", response["flags"], response)

    def test_an_output_slot_written_while_the_call_was_prepared_does_not_hide_unwritten_outputs(self):
        # prepared/prefilled_output, where the outputs are copied into the slot: every
        # timed call leaves half its output unwritten, the slot zeroed in its preparation.
        response = run(None, task="unreadable_outputs", sizes=None,
                       candidate="prepared/prefilled_output")
        self.assertEqual((response["status"], response["error_class"]), ("fail", "cheat_detected"), response)
        self.assertIn("were not written when the candidate reported the call done", response["message"])

    def test_outputs_finished_after_the_report_are_not_judged_as_finished(self):
        response = run("computed_after_report")
        self.assertEqual(response["status"], "fail", response)
        self.assertNotIn(response.get("error_class"), NOT_THE_CANDIDATES, response)


if __name__ == "__main__":
    unittest.main()
