"""KernelBenchX / TritonBench-style tasks (task.format kernelbenchx) through a real server:
the task's test code runs against the reference function in the reference worker and
against the candidate's function in the candidate child, and the judge compares
test_results leaf by named leaf; plus the flattening and the leaf check on their own."""

import json
import unittest

import numpy as np
import torch

from kforge_harness import handover, protocol
from kforge_harness.handover.host import HostMapping
from kforge_harness.l1 import checker
from kforge_harness.tasks import kbx, kbx_calls
from tests import client
from tests.client import request

# KernelBenchX's tolerances (what eval.run's tolerance preset kernelbenchx sends).
KBX_RULE = {"kind": "allclose",
            "atol": {"float64": 1e-5, "float32": 1e-5, "float16": 5e-3, "bfloat16": 5e-3},
            "rtol": {"float64": 1e-5, "float32": 1e-5, "float16": 5e-3, "bfloat16": 5e-3}}


def kbx_request(request_id, task, candidate=None, rule=KBX_RULE, timing=False, **fields):
    """`timing`: False, True, or the timing options beside enabled (a dict)."""
    options = {"rule": rule}
    if timing:
        options["timing"] = {"enabled": True, "warmup": 1, "trials": 3,
                             **(timing if isinstance(timing, dict) else {})}
    return request(request_id, "run", task, f"kbx/{candidate}" if candidate else None,
                   language="python", task_format=kbx.FORMAT, options=options, **fields)


class KbxServerTest(client.SharedServerTest):
    def verdicts(self, *requests):
        responses = self.server.ask(*requests, timeout=300)
        return {key: (r["status"], r["error_class"], r["message"], r) for key, r in responses.items()}

    def test_references_and_honest_candidates_pass_in_every_category(self):
        cases = {
            "ref-leaky": ("kbx/Activation/leaky_relu", None),
            "leaky": ("kbx/Activation/leaky_relu", "leaky_relu_honest"),
            "alias": ("kbx/Activation/leaky_relu", "leaky_relu_alias"),
            "sum": ("kbx/Reduce/row_sum", "row_sum_honest"),
            "addmm": ("kbx/MatrixMultiply/addmm_relu", "addmm_relu_honest"),
            "fp16": ("kbx/Activation/scale_shift_fp16", "scale_shift_fp16_honest"),
            "ref-values": ("kbx/Activation/describe_dtype", None),
            # In place, as the reference: changing and returning its argument is allowed.
            "in-place": ("kbx/Index/fill_rows_", "fill_rows_honest"),
        }
        got = self.verdicts(*[kbx_request(key, task, cand) for key, (task, cand) in cases.items()])
        for key in cases:
            with self.subTest(key):
                status, error_class, message, response = got[key]
                self.assertEqual((status, error_class), ("pass", ""), response)
                self.assertEqual(response["metrics"]["trials"], 2, response)
        # fp16 rounding differences stay within KernelBenchX's 5e-3.
        self.assertGreater(got["fp16"][3]["metrics"]["max_abs_diff"], 0)

    def test_each_failure_names_the_leaf_and_blames_the_candidate(self):
        cases = {
            # (task, candidate): (error class, text in the message)
            "wrong": ("kbx/Activation/leaky_relu", "leaky_relu_wrong",
                      protocol.NUMERICAL_MISMATCH, "test_results.test_case_1: 2 of 5 elements"),
            "shape": ("kbx/Reduce/row_sum", "row_sum_wrong_shape",
                      protocol.SHAPE_MISMATCH, "test_results.test_case_3 has shape [3], the reference's [3, 1]"),
            "raises": ("kbx/Activation/leaky_relu", "leaky_relu_raises",
                       protocol.RUNTIME_ERROR, "does not support negative_slope=0 (kforge_candidate.py:6"),
            "missing-leaf": ("kbx/Activation/leaky_relu", "leaky_relu_tuple",
                             protocol.SHAPE_MISMATCH, "lacks test_results.test_case_1,"),
            "no-function": ("kbx/Activation/leaky_relu", "leaky_relu_missing",
                            protocol.INIT_ERROR, "defines no function leaky_relu() (or kernel_function())"),
            "inline": ("kbx/Activation/describe_dtype", "describe_dtype_wrong",
                       protocol.NUMERICAL_MISMATCH, "test_results.fp16 is 'float', the reference's 'half'"),
            "fp16": ("kbx/Activation/scale_shift_fp16", "scale_shift_fp16_off",
                     protocol.NUMERICAL_MISMATCH, "beyond atol=0.005, rtol=0.005"),
            "in-place": ("kbx/Activation/leaky_relu", "leaky_relu_inplace",
                         protocol.CHEAT_DETECTED, "changed its tensor argument #0 in place"),
        }
        got = self.verdicts(*[kbx_request(key, task, cand) for key, (task, cand, _, _) in cases.items()])
        for key, (_, _, error_class, text) in cases.items():
            with self.subTest(key):
                status, got_class, message, response = got[key]
                self.assertEqual((status, got_class), ("fail", error_class), response)
                self.assertIn(text, message)

    def test_the_tolerance_is_the_rule_s_per_dtype(self):
        # The same fp16 candidate, 8e-3 off: within the default preset's 1e-2 per element,
        # but off as a whole (9e-3 of the output, over fp16's max_rel_l2 of 1e-3), so it
        # fails there too.
        got = self.verdicts(kbx_request("default", "kbx/Activation/scale_shift_fp16",
                                        "scale_shift_fp16_off", rule=None))
        self.assertEqual(got["default"][:2], ("fail", "numerical_mismatch"), got["default"][3])
        self.assertIn("off as a whole", got["default"][3]["message"])

    def test_timing_covers_the_function_s_calls_of_the_test_code(self):
        got = self.verdicts(kbx_request("timed", "kbx/MatrixMultiply/addmm_relu", "addmm_relu_honest",
                                        timing=True))
        status, error_class, message, response = got["timed"]
        metrics = response["metrics"]
        self.assertEqual((status, error_class), ("pass", ""), response)
        for name in ("reference_ms", "candidate_ms", "speedup", "candidate_ms_mean",
                     "reference_ms_mean"):
            self.assertGreater(metrics[name], 0, metrics)
        self.assertEqual(metrics["candidate_timing_trials"], 3)
        # Its two random cases are timed; its two fixed cases (2x2 matrices written in the
        # task file, the same at every seed) are left out, and the verdict says so.
        self.assertEqual((metrics["timed_unit_calls"], metrics["timed_unit_calls_left_out"]), (2, 2))
        self.assertIn("timed_calls_left_out", response["flags"])
        self.assertIn("left out: call #0, #1: arguments the same at every seed", message)
        self.assertNotIn("timed_calls_unchecked", response["flags"])

    def test_every_timed_unit_can_be_checked_and_honest_ones_pass_every_check(self):
        # spot_check_rate 1: every unit's results are compared with the reference's on
        # the same arguments, in place changes (fill_rows_, momentum_step) as results, a
        # complex and a lazily conjugated result (conj_spectrum), strided and expanded
        # arguments (apply_activation), numbers only (scalar_power).
        cases = {
            "addmm": ("kbx/MatrixMultiply/addmm_relu", "addmm_relu_honest"),
            "in-place": ("kbx/Index/fill_rows_", "fill_rows_honest"),
            "optimizer": ("kbx_real_like/Optimizer/momentum_step", None),
            "complex": ("kbx_real_like/LinearAlgebra/conj_spectrum", None),
            "leaky": ("kbx/Activation/leaky_relu", "leaky_relu_honest"),
            "strided": ("kbx_real_like/Math/apply_activation", None),
            # Python numbers only: no argument crosses in a buffer.
            "scalars": ("kbx_real_like/Math/scalar_power", None),
        }
        got = self.verdicts(*[kbx_request(key, task, cand, timing={"spot_check_rate": 1.0})
                              for key, (task, cand) in cases.items()])
        for key in cases:
            with self.subTest(key):
                status, error_class, message, response = got[key]
                self.assertEqual((status, error_class), ("pass", ""), response)
                metrics = response["metrics"]
                self.assertEqual(metrics["timing_spot_checks"], metrics["timing_calls"], metrics)
                self.assertGreater(metrics["timed_unit_calls"], 0, metrics)

    def test_a_test_whose_calls_are_all_fixed_is_not_timed_and_says_why(self):
        # describe_dtype's test calls the function on torch.ones only: nothing a candidate
        # could not know before its call. Correct, so a pass, without a time.
        got = self.verdicts(kbx_request("fixed", "kbx/Activation/describe_dtype", None, timing=True))
        status, error_class, message, response = got["fixed"]
        self.assertEqual((status, error_class), ("pass", ""), response)
        self.assertIn("timing_refused", response["flags"])
        self.assertNotIn("speedup", response["metrics"])
        self.assertIn("not timed: no call of the function by the task's test code can be timed "
                      "(call #0, #1: arguments the same at every seed", message)

    def test_a_call_whose_arguments_cannot_cross_is_left_out_and_named(self):
        got = self.verdicts(kbx_request("callable", "kbx_real_like/Math/apply_activation", None,
                                        timing=True))
        status, error_class, message, response = got["callable"]
        self.assertEqual((status, error_class), ("pass", ""), response)
        self.assertEqual((response["metrics"]["timed_unit_calls"],
                          response["metrics"]["timed_unit_calls_left_out"]), (3, 1))
        self.assertIn("left out: call #0: argument #1 is a builtin_function_or_method", message)

    def test_in_place_changes_are_judged_per_call_and_argument(self):
        # KernelBenchX's optimizer steps update their parameter in place. Before, one
        # argument changed in place by the reference allowed the candidate to change any
        # argument of any call (here the gradient it only has to read).
        got = self.verdicts(
            kbx_request("ref", "kbx_real_like/Optimizer/momentum_step"),
            kbx_request("grad", "kbx_real_like/Optimizer/momentum_step", "momentum_step_spends_grad"))
        self.assertEqual(got["ref"][:2], ("pass", ""), got["ref"][3])
        status, error_class, message, response = got["grad"]
        self.assertEqual((status, error_class), ("fail", protocol.CHEAT_DETECTED), response)
        self.assertIn("call #0 of the function by the test code: the candidate changed its tensor "
                      "argument #1 in place", message)

    def test_lazily_conjugated_complex_results_are_values(self):
        # torch.linalg.eig / torch.fft tasks; .conj() is a view NumPy refuses. Before, the
        # reference worker could not store such a leaf, and a candidate returning one was
        # blamed (runtime_error) for the harness's own conversion.
        got = self.verdicts(kbx_request("conj", "kbx_real_like/LinearAlgebra/conj_spectrum"))
        status, error_class, _, response = got["conj"]
        self.assertEqual((status, error_class), ("pass", ""), response)

    def test_a_timed_call_replays_the_function_s_calls_only(self):
        # The test code sleeps 300 ms around two cheap calls. Before, every refill of the
        # candidate's timing pool recorded its calls again inside the next timed call, so
        # the candidate's time held the test code's (a self-candidate measured 10-20x
        # slower than the reference on KernelBenchX's gelu and scatter).
        got = self.verdicts(kbx_request("costly", "kbx_real_like/Math/costly_test_code", timing=True))
        status, error_class, _, response = got["costly"]
        self.assertEqual((status, error_class), ("pass", ""), response)
        for name in ("reference_ms", "candidate_ms"):
            self.assertLess(response["metrics"][name], 100, response["metrics"])

    def test_a_task_that_fails_as_its_own_reference_is_a_task_error(self):
        cases = {
            "no_separator": "no separator line",
            "missing_helper": "kforge_no_such_helpers, which",
            "no_results": "left no test_results",
            "nan_result": "NaN",
        }
        requests = []
        for task in cases:
            requests.append(kbx_request(f"{task}-ref", f"kbx_broken/{task}"))
            requests.append(kbx_request(f"{task}-cand", f"kbx_broken/{task}", "leaky_relu_honest"))
        got = self.verdicts(*requests)
        for task, text in cases.items():
            for who in ("ref", "cand"):
                with self.subTest(task=task, who=who):
                    status, error_class, message, response = got[f"{task}-{who}"]
                    self.assertEqual((status, error_class), ("error", protocol.TASK_ERROR), response)
                    self.assertIn(text, message)

    def test_sizes_are_refused_for_this_format(self):
        got = self.verdicts(kbx_request("sized", "kbx/Reduce/row_sum", size_scale=0.5))
        self.assertEqual(got["sized"][:2], ("error", protocol.HARNESS_ERROR), got["sized"][3])
        self.assertIn("takes no task.sizes", got["sized"][2])


class FlattenTest(unittest.TestCase):
    def test_leaves_are_named_by_path_in_sorted_key_order(self):
        names, tensors, values = kbx.flatten(
            {"b": [torch.ones(2), (3, 2.5)], "a": {"z": None, "y": True}, 7: "text"})
        self.assertEqual(names, ["test_results.7", "test_results.a.y", "test_results.a.z",
                                 "test_results.b[0]", "test_results.b[1][0]", "test_results.b[1][1]"])
        self.assertEqual(values, {"test_results.7": "text", "test_results.a.z": None})
        self.assertEqual([t.dtype for t in tensors], [torch.bool, torch.float32, torch.int64, torch.float64])

    def test_more_leaves_than_a_comparison_takes_raise(self):
        with self.assertRaises(ValueError):
            kbx.flatten(list(range(kbx.MAX_LEAVES + 1)))

    def test_the_separator_is_a_long_line_of_hashes(self):
        reference, test = kbx.split_task("def f(x):\n    return x\n" + "#" * 146 + "\nprint(1)\n", "f.py")
        self.assertEqual(reference, "def f(x):\n    return x\n")
        self.assertEqual(test, "\n\n\nprint(1)\n")  # line numbers stay the file's
        self.assertEqual(kbx.candidate_part("def f(): pass\n"), "def f(): pass\n")

    def test_the_entry_is_named_like_the_file_or_is_the_only_function(self):
        self.assertEqual(kbx.entry_name("def helper(): pass\ndef gelu(x): pass\n", "/t/gelu.py"), "gelu")
        self.assertEqual(kbx.entry_name("import torch\ngelu = torch.nn.functional.gelu\n", "/t/gelu.py"), "gelu")
        self.assertEqual(kbx.entry_name("def fused(x): pass\n", "/t/other.py"), "fused")
        with self.assertRaises(protocol.Verdict):
            kbx.entry_name("def a(): pass\ndef b(): pass\n", "/t/other.py")


class HandOverTest(unittest.TestCase):
    """kbx_calls on its own: a call's arguments recorded on the trusted side, through JSON
    and a lent buffer, rebuilt as the child gets them."""

    def hand_over(self, *calls):
        """The child's calls (LentUnit) of a unit of `calls` ((args, kwargs) pairs)."""
        captured = [kbx_calls.capture(i, args, kwargs, torch.device("cpu"))
                    for i, (args, kwargs) in enumerate(calls)]
        for call in captured:
            call.returned(kbx.flatten(None, f"call #{call.index}", strict=True))
        unit = kbx_calls.Unit(captured, frozenset())
        mapping = HostMapping.allocate(unit.layout.nbytes)
        self.addCleanup(mapping.close)
        for view, copy in zip(handover.views(mapping, unit.layout, arrays=False), unit.copies):
            handover.fill(view, copy)
        described = json.loads(json.dumps(unit.describe()))
        layout = handover.Layout.from_json(described["layout"])
        lent = kbx_calls.LentUnit(handover.views(mapping, layout, arrays=False), layout, described["calls"],
                                  torch.device("cpu"))
        lent.fill(torch.Tensor.copy_)
        return unit, lent

    def test_cpu_arguments_lie_in_the_slots_host_twin_and_are_not_copied(self):
        # On an accelerator a unit's CPU arguments lie in host memory the child uses as it
        # is (handover.Leaf.host): here the twin is a second host buffer.
        x, array = torch.randn(4, 3), np.arange(5.0)
        captured = [kbx_calls.capture(0, (x, array, 2.0), {}, torch.device("cpu"))]
        captured[0].returned(kbx.flatten(None, "call #0", strict=True))
        unit = kbx_calls.Unit(captured, frozenset())
        self.assertEqual([leaf.host for leaf in unit.layout.leaves], [True, True])
        slot, twin = HostMapping.allocate(unit.layout.nbytes), HostMapping.allocate(unit.layout.nbytes)
        self.addCleanup(slot.close)
        self.addCleanup(twin.close)
        layout = handover.Layout.from_json(json.loads(json.dumps(unit.describe()))["layout"])
        for view, copy in zip(handover.views(slot, layout, arrays=False, host=twin), unit.copies):
            handover.fill(view, copy)
        lent = kbx_calls.LentUnit(handover.views(slot, layout, arrays=False, host=twin), layout,
                                  unit.describe()["calls"], torch.device("cpu"))
        self.assertEqual(lent.copied, [])
        (got_x, got_array, _), _, _ = lent.calls[0]
        start = twin.raw.data_ptr()
        self.assertTrue(start <= got_x.data_ptr() < start + twin.nbytes)
        self.assertTrue(torch.equal(got_x, x))
        np.testing.assert_array_equal(got_array, array)
        self.assertFalse(slot.raw.any(), "nothing of a host leaf lies in the slot itself")

    def test_every_plain_kind_of_argument_crosses_as_it_was(self):
        x = torch.randn(6, 5)
        args = (x, x.t(), torch.randn(1, 5).expand(4, 5), x[1:5:2, 1:], x,
                np.arange(6.0).reshape(2, 3), np.float32(2.5), 3, 2.5, float("inf"), float("nan"),
                complex(1, -2), True, None, "mean", torch.float16, torch.device("cpu"),
                torch.Size([2, 3]), [1, (2.0, [x])], {"k": x, 2: "v"})
        kwargs = {"dim": -1, "out_dtype": torch.int64, "weights": [x.t()]}
        _, lent = self.hand_over((args, kwargs))
        (got_args, got_kwargs, grad), = lent.calls
        self.assertTrue(grad)
        for index, (sent, got) in enumerate(zip(args, got_args)):
            with self.subTest(index=index):
                self.assertIs(type(got), type(sent))
                if isinstance(sent, torch.Tensor):
                    self.assertTrue(torch.equal(got, sent))
                    self.assertEqual(got.stride(), sent.stride())
                elif isinstance(sent, np.ndarray):
                    np.testing.assert_array_equal(got, sent)
                elif isinstance(sent, float) and sent != sent:
                    self.assertNotEqual(got, got)
                elif not isinstance(sent, (list, dict)):
                    self.assertEqual(got, sent)
        # One tensor passed twice is one tensor there too; a view of it is its own copy.
        self.assertIs(got_args[0], got_args[4])
        self.assertIs(got_args[18][1][1][0], got_args[0])
        self.assertIsNot(got_args[1], got_args[0])
        self.assertEqual(got_args[19][2], "v")
        self.assertEqual(got_kwargs["out_dtype"], torch.int64)
        self.assertEqual(got_kwargs["weights"][0].stride(), x.t().stride())
        # The expanded one holds one row, as the original did.
        self.assertEqual(got_args[2].stride(), (0, 1))

    def test_a_call_that_cannot_cross_says_which_argument_is_what(self):
        cases = {
            "a function": (((torch.randn(2), torch.relu), {}), "argument #1 is a builtin_function_or_method"),
            "a lambda": (((torch.randn(2),), {"fn": lambda v: v}), "argument fn is a function"),
            "a generator": (((torch.Generator(),), {}), "argument #0 is a torch._C.Generator"),
            "a module": (((torch.nn.Linear(2, 2),), {}), "argument #0 is a torch.nn.modules.linear.Linear"),
            "sparse": (((torch.eye(3).to_sparse(),), {}), "argument #0 is a torch.sparse_coo tensor"),
            "a tensor subclass": (((torch.randn(2).as_subclass(_Custom),), {}),
                                  "argument #0 is a tests.test_kbx._Custom"),
            "nested": ((([1, {"k": object()}],), {}), "argument #0[1]['k'] is a object"),
        }
        for name, ((args, kwargs), text) in cases.items():
            with self.subTest(name):
                call = kbx_calls.capture(0, args, kwargs, torch.device("cpu"))
                self.assertIn(text, call.reason or "")
        with torch.autocast("cpu"):
            call = kbx_calls.capture(0, (torch.randn(2),), {}, torch.device("cpu"))
        self.assertEqual(call.reason, "it runs under autocast, which the replay does not reproduce")

    def test_a_call_made_under_no_grad_is_replayed_under_no_grad(self):
        x = torch.randn(3, requires_grad=True)
        with torch.no_grad():
            _, lent = self.hand_over(((x,), {}))
        (args, _, grad), = lent.calls
        self.assertFalse(grad)
        self.assertTrue(args[0].requires_grad)
        side = kbx.FunctionSide(lambda t: t.add_(1), None)  # in place on a leaf that requires grad
        side(lent)  # raises unless the replay is under no_grad, as the test's call was
        self.assertTrue(torch.equal(args[0].detach(), x.detach() + 1))

    def test_fixed_repeated_and_uncrossable_calls_are_left_out_with_their_reasons(self):
        fixed, x = torch.ones(3), torch.randn(3)
        calls = [kbx_calls.capture(i, args, {}, torch.device("cpu"))
                 for i, args in enumerate([(fixed,), (x,), (x.clone(),), (x, print)])]
        for call in calls:
            call.returned(kbx.flatten(torch.zeros(3), f"call #{call.index}", strict=True))
        unit = kbx_calls.Unit(calls, frozenset([calls[0].key]))
        self.assertEqual([call.index for call in unit.calls], [1])
        self.assertEqual(kbx_calls.left_out_text(unit.left_out),
                         f"call #0: {kbx_calls.SAME_AT_EVERY_SEED}; call #2: {kbx_calls.REPEATED}; "
                         "call #3: argument #1 is a builtin_function_or_method")

    def test_what_a_timed_call_returns_is_read_strictly(self):
        class Lazy(tuple):
            def __iter__(self):
                raise AssertionError("its own code ran")

        # A tuple subclass (torch.max's structseq) is read through tuple's own methods.
        names, _, values = kbx.flatten(Lazy((torch.ones(2), "s")), "call #0", strict=True)
        self.assertEqual((names, values), (["call #0[0]", "call #0[1]"], {"call #0[1]": "s"}))

        class Number(float):
            pass

        for result in ([Number(1.0)], {object(): 1}, torch.ones(2).as_subclass(_Custom)):
            with self.subTest(result=type(result).__name__):
                with self.assertRaises(kbx_calls.CannotCross):
                    kbx.flatten(result, "call #0", strict=True)


class _Custom(torch.Tensor):
    """A tensor subclass: it runs code of its own when read."""


class LeafCheckTest(unittest.TestCase):
    REFERENCE = {"names": ["r.a", "r.b", "r.c"], "values": {"r.c": "x"}}

    def check(self, names, values):
        return kbx.leaf_mismatch(self.REFERENCE, {"names": names, "values": values})

    def test_equal_leaves_pass(self):
        self.assertIsNone(self.check(["r.a", "r.b", "r.c"], {"r.c": "x"}))

    def test_missing_extra_kind_and_value_fail_with_the_name(self):
        self.assertEqual(self.check(["r.a", "r.c"], {"r.c": "x"}),
                         (protocol.SHAPE_MISMATCH, "the candidate's test_results lacks r.b"))
        self.assertEqual(self.check(["r.a", "r.b", "r.c", "r.d"], {"r.c": "x"})[0], protocol.SHAPE_MISMATCH)
        self.assertEqual(self.check(["r.a", "r.b", "r.c"], {"r.c": "x", "r.b": None})[0],
                         protocol.DTYPE_MISMATCH)
        self.assertEqual(self.check(["r.a", "r.b", "r.c"], {})[0], protocol.DTYPE_MISMATCH)
        self.assertEqual(self.check(["r.a", "r.b", "r.c"], {"r.c": "y"})[0], protocol.NUMERICAL_MISMATCH)

    def test_a_change_in_place_the_reference_does_not_make_is_a_cheat(self):
        reference = dict(self.REFERENCE, mutated=[[0, 0]])
        report = {"names": ["r.a", "r.b", "r.c"], "values": {"r.c": "x"}}
        self.assertIsNone(kbx.leaf_mismatch(reference, dict(report, mutated=[[0, 0]])))
        self.assertEqual(kbx.leaf_mismatch(reference, dict(report, mutated=[[0, 1]]))[0],
                         protocol.CHEAT_DETECTED)
        self.assertEqual(kbx.leaf_mismatch(reference, dict(report, mutated=[[0, "1"]]))[0],
                         protocol.RUNTIME_ERROR)

    def test_a_malformed_hand_over_is_the_candidate_s_runtime_error(self):
        for names, values in ((None, {}), (["r.a", "r.a"], {}), (["r.a", 3], {}), (["r.a"], {"r.z": "x"}),
                              (["r.a"], {"r.a": 5})):
            with self.subTest(names=names, values=values):
                self.assertEqual(self.check(names, values)[0], protocol.RUNTIME_ERROR)


if __name__ == "__main__":
    unittest.main()


# The Triton candidates of pipelines/kernelbenchx.yaml (run on a GPU by plugins/eval/tests/gpu_check.py).
TRITON_LEAKY = open(client.os.path.join(client.HARNESS_DIR, "..", "tests", "data", "kbx-triton", "leaky_relu.py"),
                    encoding="utf-8").read()
TRITON_HEAD, TRITON_LAUNCH = TRITON_LEAKY.split("def leaky_relu(", 1)


class KbxCheckerTest(unittest.TestCase):
    """L1 for a function-entry task: the candidate's function is what the harness calls."""

    TASK = client.task_path("kbx/Activation/leaky_relu")

    def check(self, code):
        return checker.check(code, "triton", self.TASK, task_format=kbx.FORMAT)

    def rules(self, code):
        return {f["rule"] for f in self.check(code)["findings"] if f["severity"] == "error"}

    def test_an_honest_triton_function_passes_and_its_test_part_is_ignored(self):
        result = self.check(TRITON_LEAKY)
        self.assertEqual(result["status"], "pass", result)
        alias = TRITON_LEAKY.replace("def leaky_relu(", "def kernel_function(")
        self.assertEqual(self.check(alias)["status"], "pass")
        self.assertEqual(self.check(TRITON_LEAKY + "this test part does not parse(\n")["status"], "pass")

    def test_the_function_is_checked_as_forward_is(self):
        torch_work = TRITON_HEAD + "def leaky_relu(input, negative_slope=0.01):\n" \
            "    return torch.nn.functional.leaky_relu(input, negative_slope)\n"
        self.assertIn("torch-compute", self.rules(torch_work))
        self.assertIn("triton-launch-missing", self.rules(torch_work))
        fallback = TRITON_HEAD + "def leaky_relu(input, negative_slope=0.01):\n" \
            "    try:\n        return input\n    except Exception:\n        return input\n"
        self.assertIn("output-not-from-kernel", self.rules(fallback))

    def test_missing_rebound_or_decorated_functions_are_rejected(self):
        missing = TRITON_LEAKY.replace("def leaky_relu(", "def leaky(")
        self.assertIn("entry-function-missing", self.rules(missing))
        self.assertIn("defines no function leaky_relu()", self.check(missing)["message"])
        rebound = TRITON_LEAKY.split("#" * 146)[0] + "leaky_relu = torch.nn.functional.leaky_relu\n"
        self.assertIn("modelnew-rebound", self.rules(rebound))
        # Only assigned, the name is what runs even beside an honest kernel_function.
        assigned = rebound.replace("def leaky_relu(", "def kernel_function(")
        self.assertIn("entry-function-missing", self.rules(assigned))
        decorated = TRITON_LEAKY.replace("def leaky_relu(", "@torch.no_grad()\ndef leaky_relu(")
        self.assertIn("modelnew-rebound", self.rules(decorated))

    def test_modelnew_is_not_asked_for(self):
        self.assertNotIn("modelnew-missing", self.rules(TRITON_LEAKY))
        # and a KernelBench task still asks for it
        self.assertIn("modelnew-missing", {f["rule"] for f in checker.check(
            TRITON_LEAKY, "triton", client.task_path("broken_nan_output"))["findings"]})
