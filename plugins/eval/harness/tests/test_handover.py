"""Buffers lent by descriptor (handover): layouts, views on both sides, and what a child
can and cannot do to the owner's memory."""

import ast
import collections
import dataclasses
import gc
import json
import math
import os
import pathlib
import types
import unittest
import weakref

import torch

import numpy as np

from kforge_harness import handover
from kforge_harness.anticheat import observe
from kforge_harness.handover import tree
from kforge_harness.handover.host import HostMapping
from kforge_harness.reference.host import Host
from kforge_harness.tasks import kbx
from kforge_harness.tasks.runner import TaskSession


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


class NestedInputsTest(unittest.TestCase):
    """Inputs nested in lists, tuples and dicts cross as flat leaves and a skeleton
    (handover/tree.py): the tensors in the slot, where the task host checks them."""

    def inputs(self):
        return [torch.arange(6.0).reshape(2, 3), [1.5, torch.ones(4)],
                (7, {"k": np.full(3, 2.0, dtype=np.float32), 2: None}), "mode"]

    def test_the_child_gets_the_same_structure_over_the_slot(self):
        inputs = self.inputs()
        layout = Host.input_layout(inputs)
        self.assertEqual([leaf.kind for leaf in layout.leaves],
                         ["tensor", "value", "tensor", "value", "tensor", "value", "value"])
        owner = HostMapping.allocate(layout.nbytes)
        try:
            for view, value in zip(handover.views(owner, layout, arrays=False), Host._leaves(inputs)):
                if isinstance(view, torch.Tensor):
                    handover.fill(view, torch.as_tensor(value))
            # What the child is sent: JSON, a skeleton beside the leaves.
            described = json.loads(json.dumps(layout.to_json()))
            take = TaskSession.__new__(TaskSession).lend_inputs(owner, described)  # the child's side
            got = take(0, None)
            self.assertEqual(type(got[1]), list)
            self.assertEqual(type(got[2]), tuple)
            self.assertEqual(set(got[2][1]), {"k", 2})
            self.assertTrue(torch.equal(got[0], inputs[0]))
            self.assertEqual(got[1][0], 1.5)
            self.assertTrue(torch.equal(got[1][1], torch.ones(4)))
            self.assertIsInstance(got[2][1]["k"], np.ndarray)
            self.assertEqual(got[3], "mode")
            # The tensors are views of the slot: what the child writes, the host sees.
            got[1][1].add_(1)
            self.assertEqual(float(handover.views(owner, layout, arrays=False)[2][0]), 2.0)
            # Every call gets containers of its own.
            self.assertIsNot(take(0, None)[1], got[1])
        finally:
            owner.close()

    def test_numbers_json_has_no_word_for_cross_exactly(self):
        from kforge_harness import protocol
        inputs = [torch.ones(2), [float("inf"), float("-inf"), float("nan"), -0.0, 2 ** 70]]
        layout = Host.input_layout(inputs)
        wire = json.loads(protocol.encode(layout.to_json()))
        owner = HostMapping.allocate(layout.nbytes)
        try:
            got = TaskSession.__new__(TaskSession).lend_inputs(owner, wire)(0, None)[1]
        finally:
            owner.close()
        self.assertEqual(got[:2], [float("inf"), float("-inf")])
        self.assertTrue(math.isnan(got[2]))
        self.assertEqual(repr(got[3]), "-0.0")
        self.assertEqual(got[4], 2 ** 70)

    def test_flat_inputs_keep_the_layout_they_always_had(self):
        layout = Host.input_layout([torch.ones(2), 3])
        self.assertIsNone(layout.tree)
        self.assertIsInstance(layout.to_json(), list)

    def test_what_no_layout_describes_is_made_in_the_child(self):
        Point = collections.namedtuple("Point", "x y")
        for opaque in (Point(1, 2), collections.OrderedDict(a=1), object(), {(1, 2): 3},
                       torch.Size([2]), lambda: 1):
            layout = Host.input_layout([torch.ones(2), [opaque]])
            self.assertEqual(layout.tree, [0, {"list": [{"made": None}]}], opaque)
            self.assertTrue(tree.makes(layout.tree))
            # Nothing at all to lay out: the whole input set is made in the child.
            self.assertIsNone(Host.input_layout([opaque]))
        self.assertFalse(tree.makes(Host.input_layout(self.inputs()).tree))

    def test_a_tensor_given_twice_is_one_leaf_and_a_view_of_it_is_made(self):
        x = torch.ones(4)
        flat = tree.flatten([x, [x], 2.0])
        self.assertEqual((len(flat.leaves), flat.tree), (2, [0, {"list": [0]}, 1]))
        got = tree.rebuild(flat.tree, [torch.zeros(4), 2.0])
        self.assertIs(got[0], got[1][0])  # the alias kept in the child
        flat = tree.flatten([x, x[1:], torch.ones(2)])
        self.assertEqual(flat.tree, [{"made": None}, {"made": None}, 0])
        self.assertTrue(flat.unchecked)
        self.assertIsNone(Host.input_layout([x, x[:2]]))  # nothing left to lay out
        self.assertEqual(tree.flatten([x, x]).tree, [0, 0])

    def test_keys_and_text_the_wire_would_change_are_kept_or_made(self):
        from kforge_harness import protocol
        inputs = [torch.ones(2), {float("inf"): 1.0, -0.0: 2.0}, "\ud800", {float("nan"): 1}]
        flat = tree.flatten(inputs)
        self.assertEqual(flat.tree[2:], [{"made": None}, {"made": None}])
        wire = json.loads(protocol.encode(flat.tree))
        got = tree.rebuild(wire, flat.leaves, inputs)
        self.assertEqual(got[1], {float("inf"): 1.0, 0.0: 2.0})
        self.assertIs(got[2], inputs[2])

    def test_a_long_list_of_numbers_is_made_in_the_child(self):
        many = [0.5] * (tree.MAX_INLINE_VALUES + 1)
        flat = tree.flatten([torch.ones(2), many, [0.5] * 3])
        self.assertEqual(flat.tree, [0, {"made": None}, {"list": [1, 2, 3]}])
        self.assertFalse(flat.unchecked)  # numbers hold nothing a forward could change
        self.assertTrue(tree.flatten([torch.ones(2), object()]).unchecked)

    def test_a_made_value_is_taken_from_the_inputs_the_child_made(self):
        Point = collections.namedtuple("Point", "x y")
        made = [torch.zeros(2), (Point(1, 2), 3.0)]  # what the child made from the seed
        layout = Host.input_layout([torch.ones(2), (Point(1, 2), 3.0)])
        slot = [torch.ones(2), 3.0]  # what it took from the slot
        got = tree.rebuild(layout.tree, slot, made)
        self.assertIs(got[0], slot[0])  # the slot's tensor, which the task host checks
        self.assertIs(got[1][0], made[1][0])
        with self.assertRaises(ValueError):
            tree.rebuild(layout.tree, slot)

    def test_the_tensors_a_value_holds_are_laid_out_and_written_into_the_made_one(self):
        Point = collections.namedtuple("Point", "x k")

        class Held:
            def __init__(self, x, scale):
                self.x, self.scale, self.me = x, scale, self  # a cycle, left to the child

        class Slotted:
            __slots__ = ("__x",)

            def __init__(self, x):
                self.__x = x

        @dataclasses.dataclass(frozen=True)
        class Frozen:  # refuses __setattr__
            x: torch.Tensor

        class Named(collections.OrderedDict):
            locked = False

            def __setitem__(self, key, value):
                if self.locked:
                    raise AssertionError("no method of the value's class runs")
                super().__setitem__(key, value)

        def values(x):
            return [Point(x, 1.0), Held(x + 1, 0.5), Slotted(x + 2), Frozen(x + 3),
                    Named(a=x + 4)]
        host_side = values(torch.ones(2))
        flat = tree.flatten(host_side)
        self.assertTrue(flat.unchecked)
        self.assertEqual(flat.tree[1], {"made": None, "parts": [["attr", "x", 2], ["attr", "scale", 3]]})
        # Held reaches itself (made in the child from the call's seed); Slotted holds all
        # it has in its slot: laid out whole, made from a seed everyone knows.
        self.assertNotIn("whole", flat.tree[1])
        self.assertEqual(flat.tree[2], {"made": None, "parts": [["slot", "_Slotted__x", 4]], "whole": True})
        self.assertTrue(tree.makes(flat.tree))
        self.assertFalse(tree.makes(tree.flatten([Slotted(torch.ones(1)), Point(torch.ones(1), 2.0)]).tree))
        self.assertFalse(tree.flatten([Slotted(torch.ones(1))]).unchecked)
        made = values(torch.zeros(2))  # what the child made from the seed
        made[4].locked = True
        slot = [leaf.clone() if isinstance(leaf, torch.Tensor) else leaf for leaf in flat.leaves]
        got = tree.rebuild(flat.tree, slot, made)
        self.assertIs(type(got[0]), Point)
        self.assertIs(got[0].x, slot[0])
        self.assertIs(got[1], made[1])
        self.assertIs(got[1].x, slot[2])
        self.assertIs(got[2]._Slotted__x, slot[4])
        self.assertIs(got[3].x, slot[5])
        self.assertIs(dict.__getitem__(got[4], "a"), slot[6])
        self.assertEqual([tree.where(flat.tree, k) for k in (0, 2, 4, 6)],
                         ["input #0[0]", "input #1.x", "input #2._Slotted__x", "input #4['a']"])
        # A value holding no tensor is the child's as made (a kernelbenchx run's seed).
        self.assertIsNone(Host.input_layout([Held(None, 3)]))
        # The reference changing a tensor inside one is seen changing that leaf.
        before = observe.input_digests(host_side)
        host_side[2]._Slotted__x.add_(1)
        self.assertEqual(observe.changed_inputs(before, observe.input_digests(host_side)), [4])

    def test_a_changed_leaf_is_named_where_it_lies(self):
        layout = Host.input_layout(self.inputs())
        self.assertEqual(tree.where(layout.tree, 2), "input #1[1]")
        self.assertEqual(tree.where(layout.tree, 4), "input #2[1]['k']")
        self.assertEqual(tree.where(None, 1), "input #1")
        # What the reference changes in place is told leaf by leaf: x, not its sibling.
        inputs = self.inputs()
        before = observe.input_digests(inputs)
        inputs[1][1].add_(1)
        self.assertEqual(observe.changed_inputs(before, observe.input_digests(inputs)), [2])


class FreedWithoutTheCollectorTest(unittest.TestCase):
    """What the hand-over's walks touch is freed as soon as no one holds it, not when the
    cyclic collector runs: a task host made 8 GiB of inputs a timed call and kept every
    call's, held by the reference cycle of a closure that called itself, until it ran out
    of an H200's memory at 104 GiB (KernelBench level 1's matrix-vector task)."""

    def setUp(self):
        gc.collect()
        gc.disable()
        self.addCleanup(gc.enable)

    def test_inputs_laid_out_and_put_back_are_freed(self):
        held = types.SimpleNamespace(x=torch.ones(3))
        x = torch.ones(4)
        gone = [weakref.ref(x), weakref.ref(held.x)]
        flat = tree.flatten([x, [x, 2.0], {"a": x}, held])
        built = tree.rebuild(flat.tree, flat.leaves, [None, None, None, held])
        self.assertIn("input #", tree.where(flat.tree, 0))
        self.assertTrue(tree.makes_any(flat.tree))
        del x, held, flat, built
        self.assertEqual([ref() for ref in gone], [None, None])

    def test_results_of_a_kernelbenchx_call_are_freed(self):
        names, tensors, _ = kbx.flatten({"case": [torch.ones(5), 1.5]})
        self.assertEqual(len(tensors), 2)  # numbers are numeric leaves too
        gone = weakref.ref(tensors[0])
        del tensors
        self.assertIsNone(gone())

    def test_no_function_of_the_harness_is_a_closure_that_calls_itself(self):
        # The mechanism, wherever it is written next: a nested function that names itself
        # is a cycle (the function, the cell of its own name).
        root = pathlib.Path(__file__).resolve().parents[1] / "kforge_harness"
        found = []
        for path in sorted(root.rglob("*.py")):
            for outer in ast.walk(ast.parse(path.read_text())):
                if not isinstance(outer, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                for inner in ast.walk(outer):
                    if inner is not outer and isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                            isinstance(name, ast.Name) and name.id == inner.name
                            for name in ast.walk(inner)):
                        found.append(f"{path.relative_to(root)}:{inner.lineno} {outer.name}.{inner.name}")
        self.assertEqual(found, [])


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
