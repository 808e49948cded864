"""Buffers lent by descriptor (handover): layouts, views on both sides, and what a child
can and cannot do to the owner's memory."""

import os
import unittest

import torch

from kforge_harness import handover
from kforge_harness.handover.host import HostMapping


def _layout():
    return handover.Layout.pack([("tensor", "float32", (4, 3), 48, None, False),
                                 ("value", "", (), 0, 7, False),
                                 ("tensor", "int64", (5,), 40, None, False)])


class LayoutTest(unittest.TestCase):
    def test_tensors_sit_at_aligned_offsets_and_values_travel_inline(self):
        layout = _layout()
        offsets = [leaf.offset for leaf in layout.leaves if leaf.kind == "tensor"]
        self.assertEqual(offsets, [0, handover.ALIGNMENT])
        self.assertEqual(layout.nbytes, 2 * handover.ALIGNMENT)
        again = handover.Layout.from_json(layout.to_json())
        self.assertEqual([l.to_json() for l in again.leaves], layout.to_json())
        self.assertEqual(again.leaves[1].value, 7)

    def test_a_leaf_outside_its_buffer_is_refused(self):
        owner = HostMapping.allocate(64)
        try:
            with self.assertRaises(ValueError):
                handover.views(owner, _layout())
        finally:
            owner.close()


class StridedLeafTest(unittest.TestCase):
    def test_a_leaf_keeps_its_strides_and_an_expanded_one_holds_one_row(self):
        # A transposed (3 x 4, strides (1, 3)) and an expanded tensor (4 x 5 of one row,
        # strides (0, 1)): each leaf holds only the elements its strides reach.
        transposed = torch.arange(12.0).view(4, 3).t()
        expanded = torch.arange(5.0).view(1, 5).expand(4, 5)
        leaves = [handover.Leaf("tensor", "float32", (3, 4), nbytes=12 * 4, strides=(1, 3)),
                  handover.Leaf("tensor", "float32", (4, 5), nbytes=5 * 4, strides=(0, 1))]
        layout = handover.Layout.from_json(handover.Layout.pack_leaves(leaves).to_json())
        self.assertEqual([handover.span(l.shape, l.strides) for l in layout.leaves], [12, 5])
        owner = HostMapping.allocate(layout.nbytes)
        try:
            views = handover.views(owner, layout)
            for view, value in zip(views, (transposed, expanded)):
                handover.fill(view, value)
                self.assertEqual(view.stride(), value.stride())
                self.assertTrue(torch.equal(view, value))
            # Strides that reach beyond their leaf are refused.
            layout.leaves[1].strides = (5, 1)
            with self.assertRaises(ValueError):
                handover.views(owner, layout)
        finally:
            owner.close()


class HostBufferTest(unittest.TestCase):
    def test_both_sides_see_the_same_bytes(self):
        layout = _layout()
        owner = HostMapping.allocate(layout.nbytes)
        child = handover.open_buffer(handover.describe(owner, "input0"), os.dup(owner.fd),
                                     torch.device("cpu"))
        try:
            mine = handover.views(owner, layout)
            theirs = handover.views(child, layout)
            mine[0].copy_(torch.arange(12, dtype=torch.float32).view(4, 3))
            self.assertTrue(torch.equal(theirs[0], mine[0]))
            theirs[2].fill_(-3)
            self.assertEqual(mine[2].tolist(), [-3] * 5)
            self.assertEqual(theirs[1], 7)
        finally:
            child.close()
            owner.close()

    def test_a_child_cannot_shrink_or_grow_the_owners_memory(self):
        # A truncated mapping would fault (SIGBUS) in the owner, a trusted process, on its
        # next read: the memfd is sealed against it.
        owner = HostMapping.allocate(1 << 16)
        child_fd = os.dup(owner.fd)
        try:
            for size in (0, 1 << 20):
                with self.assertRaises(PermissionError):
                    os.ftruncate(child_fd, size)
            self.assertEqual(int(owner.raw[-1]), 0)
        finally:
            os.close(child_fd)
            owner.close()

    def test_the_child_refuses_a_buffer_that_is_not_sealed_or_too_small(self):
        plain = os.memfd_create("plain")
        os.ftruncate(plain, 4096)
        with self.assertRaises(OSError):
            HostMapping.open(plain, 4096)
        os.close(plain)
        owner = HostMapping.allocate(128)
        with self.assertRaises(OSError):
            HostMapping.open(os.dup(owner.fd), 1 << 20)
        owner.close()


if __name__ == "__main__":
    unittest.main()
