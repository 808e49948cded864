"""The size-scaling AST rewrite and task loading."""

import ast
import unittest

from kforge_harness.tasks import tasks
from kforge_harness.tasks.sizes import constant_int, module_sizes, rewrite_sizes
from tests import client

SOURCE = """
batch_size = 4096
dim = 393216
kernel_size = 3
M, N = 1024, 2048
K: int = 16 * 1024
E = 2 ** 14
ratio = 0.5
name = "x"

def get_inputs():
    local = 4096  # not module level: untouched
    return [batch_size, dim, kernel_size, M, N, K, E, local]
"""


def run(tree):
    namespace = {}
    exec(compile(tree, "<test>", "exec"), namespace)
    return namespace


class SizeRewriteTest(unittest.TestCase):
    def test_scale_shrinks_constants_of_16_and_more(self):
        tree = ast.parse(SOURCE)
        changes = rewrite_sizes(tree, scale=1 / 64)
        values = run(tree)["get_inputs"]()
        self.assertEqual(values, [64, 6144, 3, 16, 32, 256, 256, 4096])
        self.assertEqual(changes["batch_size"], (4096, 64))
        self.assertNotIn("kernel_size", changes)

    def test_scaled_value_is_at_least_one(self):
        tree = ast.parse("n = 100\n")
        rewrite_sizes(tree, scale=1e-9)
        self.assertEqual(run(tree)["n"], 1)

    def test_sizes_override_by_name_and_win_over_scale(self):
        tree = ast.parse(SOURCE)
        changes = rewrite_sizes(tree, sizes={"batch_size": 2, "kernel_size": 5, "N": 7},
                                scale=0.5)
        ns = run(tree)
        self.assertEqual((ns["batch_size"], ns["kernel_size"], ns["N"], ns["M"]), (2, 5, 7, 512))
        self.assertEqual(changes["kernel_size"], (3, 5))

    def test_unknown_size_name_is_an_error_naming_the_known_ones(self):
        with self.assertRaisesRegex(ValueError, "batch_sise.*batch_size"):
            rewrite_sizes(ast.parse(SOURCE), sizes={"batch_sise": 2}, where="t.py")

    def test_scale_one_changes_nothing(self):
        tree = ast.parse(SOURCE)
        self.assertEqual(rewrite_sizes(tree), {})

    def test_elements_of_tuple_and_list_literals_are_sizes_by_index(self):
        tree = ast.parse("input_shape = (32768,)\nlayers = [16384, 3]\nwide = [1024] * 16\n"
                         "kernel = (3, 5)\nmixed = (n, 64)\n")
        self.assertEqual(module_sizes(tree),
                         {"input_shape[0]": 32768, "layers[0]": 16384, "layers[1]": 3,
                          "wide[0]": 1024, "kernel[0]": 3, "kernel[1]": 5, "mixed[1]": 64})
        changes = rewrite_sizes(tree, sizes={"layers[1]": 2}, scale=1 / 64)
        namespace = {"n": 7}
        exec(compile(tree, "<test>", "exec"), namespace)
        # scaled together with the batch they broadcast against; kernels below 16 stay
        self.assertEqual(namespace["input_shape"], (512,))
        self.assertEqual(namespace["layers"], [256, 2])
        self.assertEqual(namespace["wide"], [16] * 16)
        self.assertEqual(namespace["kernel"], (3, 5))
        self.assertEqual(namespace["mixed"], (7, 1))
        self.assertEqual(changes["input_shape[0]"], (32768, 512))

    def test_constant_int_only_evaluates_integer_expressions(self):
        def value(text):
            return constant_int(ast.parse(text, mode="eval").body)
        self.assertEqual(value("16 * 1024"), 16384)
        self.assertEqual(value("-(2 ** 3)"), -8)
        self.assertIsNone(value("2.0 * 3"))
        self.assertIsNone(value("True"))
        self.assertIsNone(value("n * 2"))
        self.assertIsNone(value("2 ** 1000"))


class TaskLoadingTest(unittest.TestCase):
    def test_the_same_kernelbench_file_runs_small(self):
        task = {"path": client.task_path("relu_huge"), "sizes": {}, "size_scale": 1 / 4096}
        module, changes = tasks.load_task(task)
        self.assertEqual((module.batch_size, module.dim), (1, 96))
        self.assertEqual(changes["dim"], (393216, 96))
        self.assertEqual(list(module.get_inputs()[0].shape), [1, 96])

    def test_line_numbers_are_the_files(self):
        task = {"path": client.task_path("relu"), "sizes": {"dim": 8}, "size_scale": 1.0}
        module, _ = tasks.load_task(task)
        self.assertEqual(module.Model.forward.__code__.co_filename, client.task_path("relu"))
        self.assertEqual(module.Model.forward.__code__.co_firstlineno, 11)


if __name__ == "__main__":
    unittest.main()
