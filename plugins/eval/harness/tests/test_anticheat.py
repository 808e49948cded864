"""The anti-cheat registry and the checks the task host makes on the buffers it lends
(anticheat/buffers.py): each observes bytes the host owns and says what it concludes."""

import unittest

import torch

from kforge_harness import anticheat
from kforge_harness.anticheat import buffers
from kforge_harness.handover.host import HostMapping


class RegistryTest(unittest.TestCase):
    def test_every_check_says_where_what_and_how_and_lives_in_the_folder(self):
        import os
        folder = os.path.dirname(anticheat.__file__)
        names = [check.name for check in anticheat.CHECKS]
        self.assertEqual(len(names), len(set(names)))
        for check in anticheat.CHECKS:
            with self.subTest(check=check.name):
                self.assertTrue(check.where and check.observes and check.judges)
                first = check.module.split(" ")[0].split(",")[0]
                self.assertTrue(os.path.exists(os.path.normpath(os.path.join(folder, first))), first)


class BufferChecksTest(unittest.TestCase):
    def test_a_changed_input_is_seen_unless_the_reference_changes_it_too(self):
        x, y = torch.randn(8), torch.arange(4)
        before = buffers.digests([x, 3, y])
        self.assertEqual(buffers.changed_inputs([x, 3, y], before, set()), [])
        y[1] = 7
        self.assertEqual(buffers.changed_inputs([x, 3, y], before, set()), [2])
        self.assertEqual(buffers.changed_inputs([x, 3, y], before, {2}), [])
        verdict = buffers.inputs_verdict("timed call 4", [2], True)
        self.assertEqual(verdict["error_class"], "cheat_detected")
        self.assertIn("input #2 in place during a timed call", verdict["message"])
        self.assertIsNone(buffers.inputs_verdict("trial 1", [], False))

    def test_poison_left_in_a_floating_output_is_unfinished_work(self):
        mapping = HostMapping.allocate(64)
        try:
            buffers.poison(mapping)
            floats = mapping.raw[:32].view(torch.float32)
            ints = mapping.raw[32:].view(torch.int32)
            self.assertEqual(buffers.unwritten([floats, ints]), 8)  # integers cannot tell
            floats[:6] = 1.0
            verdict = buffers.completeness_verdict("timed call 2", [floats, ints])
            self.assertIn("2 output element(s) were not written", verdict["message"])
            floats.fill_(0.5)
            self.assertIsNone(buffers.completeness_verdict("timed call 2", [floats, ints]))
        finally:
            mapping.close()

    def test_a_fingerprint_tells_identical_outputs_from_fresh_ones(self):
        a = torch.randn(16)
        self.assertEqual(buffers.fingerprint([a]), buffers.fingerprint([a.clone()]))
        b = a.clone()
        b[5] = -b[5]
        self.assertNotEqual(buffers.fingerprint([a]), buffers.fingerprint([b]))


if __name__ == "__main__":
    unittest.main()
