"""A timed call's inputs reach the slot the child maps only when the server publishes
them, inside the call's bracket (reference/host.py: `fill` stages a timed call's inputs
in the task host's own buffer, `publish` copies them into the slot): whatever of the
candidate's runs between calls (a kernel that outlived its call runs on the device while
its processes are frozen) finds the previous call's inputs there. A trial's inputs are
written at once (no clock times a trial)."""

import unittest

import torch

from kforge_harness import handover, protocol
from kforge_harness.devices import Device
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
    return host


class PublishTest(unittest.TestCase):
    def setUp(self):
        self.host = _host()
        opened, _ = self.host.open({})
        self.session = opened["session"]
        self.slots = self.host.sessions[self.session].inputs

    def slot_inputs(self, slot, filled):
        layout = handover.Layout.from_json(filled["inputs"])
        return handover.views(self.slots[slot], layout, arrays=False)

    def test_a_timed_calls_inputs_reach_the_slot_only_when_published(self):
        before = [raw.clone() for raw in (slot.raw for slot in self.slots)]
        filled = self.host.fill({"session": self.session, "slot": 1, "seed": 99, "trial": False})
        for slot, raw in zip(self.slots, before):
            self.assertTrue(torch.equal(slot.raw, raw), "a staged input reached a slot")
        self.assertEqual(self.host.publish({"session": self.session, "slot": 1}), {"published": True})
        expected = self.host._make_inputs(99, None)
        for view, value in zip(self.slot_inputs(1, filled), expected):
            self.assertTrue(torch.equal(view, value))
        self.assertTrue(torch.equal(self.slots[0].raw, before[0]), "the other slot changed")

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


if __name__ == "__main__":
    unittest.main()
