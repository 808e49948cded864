"""A timed call's bracket around what the child's memory holds (reference/host.py): its
inputs reach the slot the child maps only when the server publishes them, inside the
bracket (`fill` keeps them in the task host's own memory, `publish` copies them), and
its outputs are judged from the copy `take` makes as the bracket closes. Whatever of the
candidate's runs outside the bracket (a kernel that outlived its call runs on the device
while its processes are frozen) finds the previous call's inputs, and what it writes into
the output slot afterwards is not judged. A trial's inputs are written at once (no clock
times a trial)."""

import os
import select
import time
import unittest
from unittest import mock

import torch

from kforge_harness import handover, protocol
from kforge_harness.devices import Device
from kforge_harness.reference import host as host_module
from kforge_harness.reference.host import Host
from tests import client


def _host():
    path = client.task_path("relu")
    with open(path, encoding="utf-8") as handle:
        source = handle.read()
    request = protocol.normalise_request(client.request("publish", "run", "relu"))
    # As the server makes a task host's job of a request (server._start_host).
    job = {"task": dict(request["task"], source=source),
           "options": {"seed": 7, "inputs_on_device": request["options"]["inputs_on_device"]},
           "limits": request["limits"], "input_seeds": [11], "keep_bytes": 1 << 26, "workers": 1}
    host = Host(job, Device("cpu"), channel=None)
    host.start()
    return host, request["options"]["rule"]


def rang(session):
    """The session's bell, if it rang (the host's serve loop waits on it the same way)."""
    return select.select([session.doorbell.read_fd], [], [], 0)[0]


class PublishTest(unittest.TestCase):
    def setUp(self):
        self.host, self.rule = _host()
        opened, _ = self.host.open({})
        self.session = opened["session"]
        self.slots = self.host.sessions[self.session].inputs

    def slot_inputs(self, slot, filled):
        layout = handover.Layout.from_json(filled["inputs"])
        return handover.views(self.slots[slot], layout, arrays=False)

    def timed_call(self, slot, seed):
        self.host.fill({"session": self.session, "slot": slot, "seed": seed, "trial": False})
        self.host.publish({"session": self.session, "slot": slot})
        session = self.host.sessions[self.session]
        return handover.views(session.output, session.output_layout, arrays=False)[0]

    def after(self, slot, seed):
        return self.host.after({"session": self.session, "slot": slot, "seed": seed, "check": True,
                                "label": "call", "rule": self.rule})

    def test_a_timed_calls_inputs_reach_the_slot_only_when_published(self):
        # Kept as get_inputs() made them (few tensors), or in the staging buffer (many).
        for kept in (host_module.MAX_TENSORS_KEPT, 0):
            with self.subTest(max_tensors_kept=kept), \
                    mock.patch.object(host_module, "MAX_TENSORS_KEPT", kept):
                seed = 99 + kept
                before = [slot.raw.clone() for slot in self.slots]
                filled = self.host.fill({"session": self.session, "slot": 1, "seed": seed, "trial": False,
                                         "known": False})
                kept_pairs, staged_bytes = self.host.sessions[self.session].staged[1]
                self.assertEqual((bool(kept_pairs), staged_bytes == 0), (kept > 0, kept > 0))
                for slot, raw in zip(self.slots, before):
                    self.assertTrue(torch.equal(slot.raw, raw), "a staged input reached a slot")
                self.assertEqual(self.host.publish({"session": self.session, "slot": 1}), {"published": True})
                for view, value in zip(self.slot_inputs(1, filled), self.host._make_inputs(seed, None)):
                    self.assertTrue(torch.equal(view, value))
                self.assertTrue(torch.equal(self.slots[0].raw, before[0]), "the other slot changed")

    def test_unchanged_layouts_are_not_sent_again(self):
        """The fill's reply is the trusted round trip the server takes off the next
        call's bracket (`exchange_now`): its size must not grow with the task's leaves."""
        def fill(slot, known):
            return self.host.fill({"session": self.session, "slot": slot, "seed": 5, "trial": False,
                                   "known": known})
        first = fill(0, True)
        self.assertIn("inputs", first)
        self.assertIn("output", first)
        again = fill(0, True)
        self.assertTrue(again.get("layouts_unchanged"), again)
        self.assertNotIn("inputs", again)
        self.assertNotIn("output", again)
        # The other slot's layouts were never sent; a server that says its child lacks
        # them (a new child, say) is sent them again.
        self.assertIn("inputs", fill(1, True))
        self.assertIn("inputs", fill(0, False))

    def test_publishing_again_changes_nothing(self):
        filled = self.host.fill({"session": self.session, "slot": 0, "seed": 5, "trial": False})
        self.host.publish({"session": self.session, "slot": 0})
        views = self.slot_inputs(0, filled)
        views[0].zero_()  # what a candidate may do to its inputs during the call
        self.host.publish({"session": self.session, "slot": 0})
        self.assertEqual(int(views[0].count_nonzero()), 0)

    def test_a_trials_inputs_are_written_at_once(self):
        filled = self.host.fill({"session": self.session, "slot": 0, "seed": 3, "trial": True})
        for view, value in zip(self.slot_inputs(0, filled), self.host._make_inputs(3, None)):
            self.assertTrue(torch.equal(view, value))

    def test_a_timed_call_is_judged_on_the_outputs_taken(self):
        output = self.timed_call(0, 5)
        output.copy_(torch.relu(self.host._make_inputs(5, None)[0]))  # the child's call
        taken = self.host.take({"session": self.session})
        self.assertLessEqual(taken["taken_at"], time.monotonic())
        output.fill_(float("nan"))  # written after the bracket closed: not judged
        self.assertEqual(self.after(0, 5)["status"], "pass")

    def test_outputs_written_only_after_the_take_are_not_judged_written(self):
        output = self.timed_call(1, 6)
        self.host.take({"session": self.session})  # the slot still holds the poison
        output.copy_(torch.relu(self.host._make_inputs(6, None)[0]))  # too late
        verdict = self.after(1, 6)
        self.assertEqual((verdict["status"], verdict["error_class"]), ("fail", "cheat_detected"))

    def test_a_ring_takes_the_outputs_then_and_take_answers_with_that_moment(self):
        output = self.timed_call(0, 8)
        session = self.host.sessions[self.session]
        output.copy_(torch.relu(self.host._make_inputs(8, None)[0]))  # the child's call
        os.write(session.doorbell.fd, b"\x01")  # its ring
        self.assertEqual(rang(session), [session.doorbell.read_fd])
        self.host._answer_ring(session)  # what the host's serve loop does on a ring
        rung = time.monotonic()
        output.fill_(float("nan"))  # written after the ring: not judged
        time.sleep(0.01)
        taken = self.host.take({"session": self.session})
        self.assertLessEqual(taken["taken_at"], rung)
        self.assertEqual(self.after(0, 8)["status"], "pass")

    def test_rings_before_the_publish_are_not_the_calls(self):
        session = self.host.sessions[self.session]
        os.write(session.doorbell.fd, b"\x01")  # rung in the preparation, say
        output = self.timed_call(1, 9)
        self.assertEqual(rang(session), [])
        output.copy_(torch.relu(self.host._make_inputs(9, None)[0]))
        before = time.monotonic()
        self.assertGreaterEqual(self.host.take({"session": self.session})["taken_at"], before)
        self.assertEqual(self.after(1, 9)["status"], "pass")

    def test_a_step_takes_the_outputs_then_checks_them_then_fills_the_next_call(self):
        output = self.timed_call(0, 12)
        output.copy_(torch.relu(self.host._make_inputs(12, None)[0]))  # the child's call
        before = time.monotonic()
        stepped = self.host.step({
            "take": {"session": self.session},
            "after": {"session": self.session, "slot": 0, "seed": 12, "check": True, "label": "call",
                      "rule": self.rule},
            "fill": {"session": self.session, "slot": 1, "seed": 13, "trial": False, "known": False}})
        self.assertGreaterEqual(stepped["taken"]["taken_at"], before)
        self.assertEqual(stepped["after"]["status"], "pass")
        self.assertIn("inputs", stepped["filled"])
        self.assertGreater(stepped["host_ms"], 0)

    def test_a_step_whose_outputs_cannot_be_taken_does_nothing_else(self):
        self.timed_call(0, 14)
        unread = {"pid": os.getpid(), "addresses": [0]}  # nothing lies there
        stepped = self.host.step({
            "take": {"session": self.session, "read": unread},
            "after": {"session": self.session, "slot": 0, "seed": 14, "check": True, "label": "call",
                      "rule": self.rule},
            "fill": {"session": self.session, "slot": 1, "seed": 15, "trial": False}})
        self.assertIn("unread", stepped["taken"])
        self.assertNotIn("after", stepped)
        self.assertNotIn("filled", stepped)


if __name__ == "__main__":
    unittest.main()
