"""The L1 static checker, in process (no candidate code runs).

Two corpora drive most of it: tests/data/candidates/hostile_l1 (one file per way of
hiding work from L1; each names, in its `# expect:` line, the rule that must reject it)
and tests/data/candidates/honest_l1 plus the bundled example candidates (which must pass).
"""

import ast
import os
import re
import tempfile
import textwrap
import unittest

from kforge_harness.l1 import checker
from kforge_harness import protocol
from kforge_harness.l1.analysis import Func, Kernel, Launcher, Mod, ModuleFacts, Native, Opaque
from tests import client

SUITE = os.path.normpath(os.path.join(client.HARNESS_DIR, "..", "..", "..", "examples",
                                      "kernelbench-mini"))
HOSTILE = os.path.join(client.DATA, "candidates", "hostile_l1")
HONEST = os.path.join(client.DATA, "candidates", "honest_l1")

TRITON_RELU = '''
import torch
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(y_ptr + offsets, tl.maximum(x, 0.0), mask=mask)


def launch(x, y):
    n = x.numel()
    relu_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        launch(x, y)
        return y
'''

CUDA_ADD = '''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

add_source = """
#include <torch/extension.h>
__global__ void add_kernel(const float* a, const float* b, float* out, int size) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < size) out[i] = a[i] + b[i];
}
torch::Tensor add_cuda(torch::Tensor a, torch::Tensor b) {
    auto out = torch::empty_like(a);
    add_kernel<<<(a.numel() + 255) / 256, 256>>>(a.data_ptr<float>(), b.data_ptr<float>(),
                                                 out.data_ptr<float>(), a.numel());
    return out;
}
"""
add_cpp_source = "torch::Tensor add_cuda(torch::Tensor a, torch::Tensor b);"

add = load_inline(name="add", cpp_sources=add_cpp_source, cuda_sources=add_source,
                  functions=["add_cuda"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.add = add

    def forward(self, a, b):
        return self.add.add_cuda(a, b)
'''


def triton_with(forward_body, extra="", init="", methods=""):
    """TRITON_RELU with forward's body replaced; `extra` goes at module level before
    ModelNew, `init` into its __init__, `methods` into its class body."""
    head = TRITON_RELU.partition("class ModelNew")[0]
    model = ("class ModelNew(torch.nn.Module):\n    def __init__(self):\n"
             "        super().__init__()\n" + textwrap.indent(textwrap.dedent(init), "        ")
             + textwrap.indent(textwrap.dedent(methods), "    ")
             + "\n    def forward(self, x):\n"
             + textwrap.indent(textwrap.dedent(forward_body), "        "))
    return head + textwrap.dedent(extra) + "\n\n" + model


def check(code, language="triton", task="relu", rules_file=None):
    return checker.check(code, language, client.task_path(task), rules_file)


def rule_ids(result):
    return {finding["rule"] for finding in result["findings"]}


def corpus(directory):
    """(name, code, language, task path, expected rule) for each file of a corpus."""
    for name in sorted(os.listdir(directory)):
        with open(os.path.join(directory, name), encoding="utf-8") as handle:
            code = handle.read()
        header = dict(re.findall(r"^# (expect|task|language): (\S+)", code, re.M))
        task = header.get("task", "relu")
        path = client.task_path(task)
        if not os.path.exists(path):
            path = os.path.join(SUITE, "tasks", task + ".py")
        yield name, code, header.get("language", "triton"), path, header.get("expect")


class CorpusTest(unittest.TestCase):
    def test_every_hostile_candidate_is_rejected_by_its_rule(self):
        seen = 0
        for name, code, language, task, expected in corpus(HOSTILE):
            with self.subTest(candidate=name):
                result = checker.check(code, language, task)
                self.assertEqual(result.get("error_class"), protocol.CHECKER_REJECTED, result)
                self.assertIn(expected, rule_ids(result), result["findings"])
                for finding in result["findings"]:
                    self.assertGreater(finding["line"], 0, finding)
                    self.assertGreater(finding["col"], 0, finding)
                    self.assertTrue(finding["hint"], finding)
            seen += 1
        self.assertGreaterEqual(seen, 50)

    def test_honest_tricky_candidates_pass(self):
        seen = 0
        for name, code, language, task, _ in corpus(HONEST):
            with self.subTest(candidate=name):
                result = checker.check(code, language, task)
                self.assertEqual(result["status"], "pass", result["findings"])
            seen += 1
        self.assertGreaterEqual(seen, 6)

    def test_bundled_candidates_keep_their_l1_verdict(self):
        """Every candidate shipped in examples/: the honest ones pass; a broken one is
        rejected by L1 only when its `# expect:` class is L1's (checker_rejected,
        syntax_error) -- its other failures are for L2 and L3 to find."""
        seen = 0
        for folder, language in (("triton", "triton"), ("broken_triton", "triton"),
                                 ("cuda", "cuda"), ("broken_cuda", "cuda"), ("cpp", "cpp"),
                                 ("broken", "cpp")):
            directory = os.path.join(SUITE, "candidates", folder)
            for name in sorted(os.listdir(directory)):
                task = name.split("__", 1)[-1][:-3].split(".")[0]
                with open(os.path.join(directory, name), encoding="utf-8") as handle:
                    code = handle.read()
                expected = re.match(r"# expect: (\S+)", code)
                l1_class = expected.group(1) if expected and expected.group(1) in (
                    protocol.CHECKER_REJECTED, protocol.SYNTAX_ERROR) else None
                with self.subTest(candidate=f"{folder}/{name}"):
                    result = checker.check(code, language,
                                           os.path.join(SUITE, "tasks", task + ".py"))
                    self.assertEqual(result.get("error_class"), l1_class, result["findings"])
                seen += 1
        self.assertGreaterEqual(seen, 70)


class StructureTest(unittest.TestCase):
    def test_correct_candidates_pass(self):
        self.assertEqual(check(TRITON_RELU)["status"], "pass", check(TRITON_RELU))
        self.assertEqual(check(CUDA_ADD, "cuda")["status"], "pass", check(CUDA_ADD, "cuda"))
        for name, task in (("relu_cpp", "relu"), ("linear_cpp", "linear")):
            result = check(client.candidate_code(name), "cpp", task)
            self.assertEqual(result["status"], "pass", result)

    def test_syntax_error_names_the_line(self):
        result = check(client.candidate_code("syntax_error"), "cpp")
        self.assertEqual(result["error_class"], protocol.SYNTAX_ERROR)
        self.assertEqual(result["findings"][0]["line"], 5)
        self.assertIn("line 5", result["message"])

    def test_modelnew_missing(self):
        result = check("import torch\nclass Model(torch.nn.Module):\n    pass\n", "python")
        self.assertEqual(rule_ids(result), {"modelnew-missing"})

    def test_constructor_must_take_the_references_parameters(self):
        result = check(client.candidate_code("wrong_ctor"), "cpp", "linear")
        self.assertEqual(result["error_class"], protocol.CHECKER_REJECTED)
        finding = next(f for f in result["findings"] if f["rule"] == "constructor-signature")
        self.assertIn("(in_features)", finding["message"])
        self.assertIn("(in_features, out_features)", finding["message"])

    def test_extra_constructor_parameters_need_defaults(self):
        code = client.candidate_code("linear_cpp").replace(
            "def __init__(self, in_features, out_features):",
            "def __init__(self, in_features, out_features, tile=16):")
        self.assertEqual(check(code, "cpp", "linear")["status"], "pass")

    def test_triton_needs_a_kernel_and_a_launch(self):
        no_kernel = TRITON_RELU.replace("@triton.jit\n", "")
        self.assertIn("triton-kernel-missing", rule_ids(check(no_kernel)))
        no_launch = TRITON_RELU.replace("        launch(x, y)\n", "        y.zero_()\n")
        self.assertIn("triton-launch-missing", rule_ids(check(no_launch)))

    def test_jit_imported_by_name_counts(self):
        code = TRITON_RELU.replace("import triton\n", "import triton\nfrom triton import jit\n")
        code = code.replace("@triton.jit", "@jit")
        self.assertEqual(check(code)["status"], "pass")

    def test_cpp_needs_source_extern_c_load_and_call(self):
        code = client.candidate_code("relu_cpp")
        self.assertIn("cpp-extern-c-missing", rule_ids(check(code.replace('extern "C" ', ""), "cpp")))
        self.assertIn("cpp-source-missing",
                      rule_ids(check(code.replace("cpp_source =", "source ="), "cpp")))
        no_call = code.replace("        self.lib.relu_forward(", "        print(")
        self.assertIn("cpp-call-missing", rule_ids(check(no_call, "cpp")))

    def test_cuda_needs_a_global_kernel(self):
        code = CUDA_ADD.replace("__global__ ", "")
        self.assertIn("cuda-kernel-missing", rule_ids(check(code, "cuda")))

    def test_extracted_sources(self):
        extracted = check(CUDA_ADD, "cuda")["extracted"]
        self.assertIn("__global__ void add_kernel", extracted["cuda_source"])
        self.assertEqual(extracted["cpp_source"],
                         "torch::Tensor add_cuda(torch::Tensor a, torch::Tensor b);")
        self.assertEqual(extracted["cuda_functions"], ["add_cuda"])
        cpp = check(client.candidate_code("relu_cpp"), "cpp")["extracted"]
        self.assertTrue(cpp["cpp_source"].lstrip().startswith("#include <cstdint>"))

    def test_python_language_gets_only_structural_rules(self):
        code = "import torch\nclass ModelNew(torch.nn.Module):\n" \
               "    def forward(self, x):\n        return torch.relu(x)\n"
        self.assertEqual(check(code, "python")["status"], "pass")


class DeepCodeTest(unittest.TestCase):
    """Code nested or chained beyond what Python's parser or L1's analysis follows is the
    candidate's syntax_error, said at once: before, a RecursionError or MemoryError in
    the checker was a harness_error. Every shape of deep code, 10^3 to 10^6 deep."""

    SHAPES = {
        "unary minus": lambda n: "-" * n + "x",
        "not": lambda n: "not " * n + "x",
        "operators": lambda n: "x" + "+x" * n,
        "powers": lambda n: "x" + "**x" * n,
        "attributes": lambda n: "x" + ".a" * n,
        "calls": lambda n: "x" + "()" * n,
        "subscripts": lambda n: "x" + "[0]" * n,
        "lambdas": lambda n: "lambda: " * n + "0",
        "conditionals": lambda n: "x if x else " * n + "x",
        "nested calls": lambda n: "f(" * n + ")" * n,
        "comparisons": lambda n: "x" + "<x" * n,
        "conjunctions": lambda n: "x" + " and x" * n,
    }
    # Flat in the syntax tree however long (a list of operands): checked like any code.
    FLAT = ("comparisons", "conjunctions")

    def candidate(self, expression):
        return ("import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n"
                f"        y = {expression}\n        return y\n")

    def test_every_shape_at_every_depth_gets_the_candidate_s_verdict(self):
        for depth in (10 ** 3, 10 ** 4, 10 ** 5, 10 ** 6):
            for shape, make in self.SHAPES.items():
                code = self.candidate(make(depth))
                if shape in self.FLAT and depth == 10 ** 5 and len(code) <= checker.MAX_SOURCE_CHARS:
                    continue  # parsed in seconds and passes: the 10^4 case shows it
                with self.subTest(shape=shape, depth=depth):
                    result = check(code, "python")
                    if result["status"] == "pass":
                        self.assertTrue(depth <= 10 ** 4, result)
                        continue
                    self.assertEqual(result["error_class"], protocol.SYNTAX_ERROR, result)
                    self.assertEqual(result["findings"][0]["rule"], "syntax")
                    if depth >= 10 ** 4 and shape not in self.FLAT + ("nested calls",) \
                            and len(code) <= checker.MAX_SOURCE_CHARS:
                        self.assertIn("nested too deeply", result["message"])

    def test_code_beyond_the_size_l1_reads_is_refused_before_parsing(self):
        code = self.candidate("x" + "<x" * checker.MAX_SOURCE_CHARS)
        result = check(code, "python")
        self.assertEqual(result["error_class"], protocol.SYNTAX_ERROR)
        self.assertIn(f"more than the {checker.MAX_SOURCE_CHARS}", result["message"])

    def test_deep_code_l1_parses_but_cannot_follow(self):
        # 800 nested lambdas parse, but following them exceeds the recursion limit.
        result = check(self.candidate(self.SHAPES["lambdas"](800)), "python")
        self.assertEqual(result["error_class"], protocol.SYNTAX_ERROR, result)
        self.assertIn("nested too deeply for L1's analysis", result["message"])

    def test_folded_strings_and_numbers_stay_small(self):
        doubling = "".join(f"s{i} = s{i - 1} + s{i - 1}\n" for i in range(1, 30))
        numbers = "n0 = 10 ** 64\n" + "".join(f"n{i} = n{i - 1} ** 64\n" for i in range(1, 6))
        code = TRITON_RELU.replace("import torch\n", "import torch\ns0 = 'ab' * 1000\n" + doubling
                                   + numbers + "y = 'x' * n5\n", 1)
        self.assertEqual(check(code)["status"], "pass")


class AntiCheatTest(unittest.TestCase):
    def assertRejected(self, code, rule, language="triton", task="relu"):
        result = check(code, language, task)
        self.assertEqual(result.get("error_class"), protocol.CHECKER_REJECTED, result)
        self.assertIn(rule, rule_ids(result), result["findings"])
        finding = next(f for f in result["findings"] if f["rule"] == rule)
        self.assertGreater(finding["line"], 0)
        self.assertTrue(finding["hint"])
        return finding

    def assertPasses(self, code, language="triton", task="relu"):
        result = check(code, language, task)
        self.assertEqual(result["status"], "pass", result["findings"])

    def test_torch_functions_are_named_where_they_are_used(self):
        code = triton_with("y = torch.relu(x)\nlaunch(y, y)\nreturn y\n")
        finding = self.assertRejected(code, "torch-compute")
        self.assertIn("torch.relu", finding["message"])
        line = next(i for i, text in enumerate(code.splitlines(), 1) if "torch.relu" in text)
        col = code.splitlines()[line - 1].index("relu(x)") + 1
        self.assertEqual(rule_ids(check(code)), {"torch-compute"})
        self.assertEqual((finding["line"], finding["col"]), (line, col))
        self.assertIn(f"line {line}:{col}: [torch-compute]", check(code)["message"])

    def test_spellings_of_one_torch_function_resolve_alike(self):
        for body, extra, imports in (
                ("F.relu(x)", "", "import torch.nn.functional as F\n"),
                ("getattr(torch, 'relu')(x)", "", ""),
                ("getattr(torch, 're' + f'{\"lu\"}')(x)", "", ""),
                ("act(x)", "act = torch.relu\n", ""),
                ("self.op(x)", "", ""),
                ("namespace().relu(x)", "def namespace():\n    return torch\n", ""),
                ("OPS['relu'](x)", "OPS = {'relu': torch.relu, 'size': 4}\n", "")):
            with self.subTest(spelling=body):
                code = imports + triton_with(f"y = {body}\nlaunch(x, y)\nreturn y\n", extra=extra,
                                             init="self.op = torch.relu\n")
                finding = self.assertRejected(code, "torch-compute")
                self.assertIn("torch.relu", finding["message"])

    def test_plumbing_is_allowed_anywhere(self):
        body = """
        x = x.contiguous().view(-1)
        y = torch.empty_like(x)
        z = torch.zeros(x.numel(), device=x.device, dtype=x.dtype)
        assert isinstance(x, torch.Tensor) and x.dtype in (torch.float32, torch.float16)
        with torch.no_grad(), torch.cuda.device(x.device):
            launch(x, y)
        shape = list(x.shape)
        shape.append(1)
        return y.reshape(x.shape).to(torch.float32)
        """
        self.assertPasses(triton_with(body, init="self.scale = torch.nn.Parameter(torch.ones(1))\n"
                                                "torch.nn.init.normal_(self.scale)\n"))

    def test_a_namespace_passed_around_is_followed(self):
        code = triton_with("y = apply(torch, x)\nlaunch(x, y)\nreturn y\n",
                           extra="def apply(namespace, value):\n"
                                 "    return namespace.sigmoid(value)\n")
        finding = self.assertRejected(code, "torch-compute")
        self.assertIn("torch.sigmoid", finding["message"])

    def test_methods_outside_the_plumbing_list_are_rejected(self):
        self.assertRejected(triton_with("launch(x, x)\nreturn x.sum(dim=1)\n"), "tensor-method")
        self.assertRejected(triton_with("x.mul_(2)\nlaunch(x, x)\nreturn x\n"), "tensor-method")
        bound = self.assertRejected(triton_with("f = x.logsumexp\ny = f(1)\nlaunch(y, y)\n"
                                                "return y\n"), "tensor-method")
        self.assertIn(".logsumexp", bound["message"])

    def test_python_container_and_string_methods_are_not_tensor_methods(self):
        body = """
        sizes = [int(s) for s in x.shape]
        sizes.sort()
        names = {"a": 1}
        names.update(b=2)
        label = ", ".join(str(s) for s in sizes).upper()
        y = torch.empty_like(x)
        launch(x, y)
        return y
        """
        self.assertPasses(triton_with(body))

    def test_matmul_in_every_spelling(self):
        self.assertRejected(triton_with("launch(x, x)\nreturn x @ x.t()\n"), "matmul-operator")
        self.assertRejected(triton_with("launch(x, x)\nreturn x.__matmul__(x)\n"), "dunder-access")
        self.assertRejected("import operator\n" + triton_with(
            "launch(x, x)\nreturn operator.matmul(x, x)\n"), "operator-use")
        self.assertPasses("import functools, operator\n" + triton_with(
            "n = functools.reduce(operator.mul, x.shape, 1)\ny = torch.empty(n, device=x.device)\n"
            "launch(x, y)\nreturn y\n"))

    def test_construction_and_module_level_code_are_checked(self):
        self.assertRejected(triton_with("launch(self.t, x)\nreturn x\n",
                                        init="self.t = torch.tanh(torch.ones(4))\n"),
                            "torch-compute")
        self.assertRejected(triton_with("launch(T, x)\nreturn x\n",
                                        extra="T = torch.tanh(torch.ones(4))\n"),
                            "torch-compute")

    def test_unreachable_code_and_the_main_block_are_not(self):
        code = TRITON_RELU + textwrap.dedent('''

            class Model(torch.nn.Module):
                def forward(self, x):
                    return torch.relu(x)


            def get_inputs():
                return [torch.randn(4, 4).relu()]


            if __name__ == "__main__":
                import numpy
                print(torch.allclose(ModelNew()(torch.ones(3)), torch.relu(torch.ones(3))))
            ''')
        self.assertPasses(code)

    def test_layers_hold_weights_but_do_not_compute(self):
        code = triton_with("return self.act(x)\n", init="self.act = torch.nn.ReLU()\n")
        self.assertRejected(code, "torch-layer-call")
        code = triton_with("return self.linear.forward(x)\n",
                           init="self.linear = torch.nn.Linear(4, 4)\n")
        self.assertRejected(code, "torch-layer-call")
        self.assertPasses(client.candidate_code("linear_cpp"), "cpp", "linear")

    def test_reference_model_use(self):
        code = TRITON_RELU.replace("class ModelNew(torch.nn.Module):",
                                   "class Model(torch.nn.Module):\n    pass\n\n\n"
                                   "class ModelNew(Model):")
        self.assertRejected(code, "reference-model-use")
        self.assertRejected(triton_with("return Model()(x)\n"), "reference-model-use")

    def test_try_fallback(self):
        result = check(client.candidate_code("torch_fallback"), "cpp")
        self.assertTrue({"try-in-forward", "torch-compute"} <= rule_ids(result), result)

    def test_threads_streams_and_monkey_patches(self):
        self.assertRejected("import threading\n" + TRITON_RELU, "concurrency-import")
        self.assertRejected(
            "from concurrent.futures import ThreadPoolExecutor\n" + TRITON_RELU,
            "concurrency-import")
        self.assertRejected(triton_with("s = torch.cuda.Stream()\nlaunch(x, x)\nreturn x\n"),
                            "side-stream")
        self.assertRejected(TRITON_RELU + "\nimport time\ntime.perf_counter = lambda: 0.0\n",
                            "module-monkey-patch")
        self.assertRejected(TRITON_RELU + "\ntorch.cuda.Event.elapsed_time = lambda s, e: 1e-3\n",
                            "module-monkey-patch")
        self.assertRejected(TRITON_RELU + "\nsetattr(torch.cuda, 'synchronize', print)\n",
                            "module-monkey-patch")
        self.assertRejected(TRITON_RELU + "\ntorch.backends.cuda.matmul.allow_tf32 = True\n",
                            "module-monkey-patch")

    def test_one_place_is_reported_by_the_most_specific_rule(self):
        result = check(triton_with("s = torch.cuda.Stream()\nlaunch(x, x)\nreturn x\n"))
        self.assertEqual(rule_ids(result), {"side-stream"})

    def test_introspection_and_dynamic_code(self):
        self.assertRejected("import gc\n" + triton_with("gc.get_objects()\nreturn x\n"),
                            "introspection")
        self.assertRejected(TRITON_RELU + "\nexec('x = 1')\n", "dynamic-code")
        self.assertRejected(triton_with("run = eval\nrun('1')\nlaunch(x, x)\nreturn x\n"),
                            "dynamic-code")

    def test_import_allowlist(self):
        self.assertRejected("import scipy.special\n" + TRITON_RELU, "import-not-allowed")
        self.assertRejected("from torch import *\n" + TRITON_RELU, "import-not-allowed")
        self.assertPasses("import math, os, ctypes, functools\nfrom typing import List\n"
                          + TRITON_RELU)

    def test_arithmetic_result_is_not_a_kernel_output(self):
        self.assertRejected(triton_with("y = torch.empty_like(x)\nlaunch(x, y)\n"
                                        "return y * 0 + (x > 0) * x\n"), "output-not-from-kernel")
        self.assertRejected(triton_with("launch(x, self.table)\nreturn self.cached\n",
                                        init="self.cached = None\nself.table = None\n"),
                            "output-not-from-kernel")
        # An allocated buffer no kernel writes is a bug L3 finds, not L1's business.
        self.assertPasses(triton_with("y = torch.empty_like(x)\nlaunch(x, x)\nreturn y\n"))
        # The output may come back through the candidate's own helpers and views.
        self.assertPasses(triton_with("return self.finish(run(x))[0:]\n",
                                      extra="def run(x):\n    y = torch.empty_like(x)\n"
                                            "    launch(x, y)\n    return y\n",
                                      methods="def finish(self, y):\n"
                                              "    return y.view(-1).squeeze()\n"))

    def test_masks_and_rearranging_copies(self):
        self.assertRejected(triton_with("y = x.clone()\ny[y < 0] = 0\nlaunch(y, y)\nreturn y\n"),
                            "masked-indexing")
        self.assertRejected(triton_with("keep = (x > 0) & (x < 6)\ny = x.clone()\ny[~keep] = 0\n"
                                        "launch(y, y)\nreturn y\n"), "masked-indexing")
        self.assertRejected(triton_with("y = x.t()\nz = y.contiguous()\nlaunch(z, z)\nreturn z\n"),
                            "rearrange-copy")
        self.assertRejected(triton_with("z = torch.empty_like(x)\nz.copy_(x.permute(1, 0))\n"
                                        "launch(z, z)\nreturn z\n"), "rearrange-copy")
        self.assertPasses(triton_with("z = x.view(-1).contiguous()\nlaunch(z, z)\nreturn z\n"))


class NativeSourceTest(unittest.TestCase):
    def cuda_with(self, body):
        return CUDA_ADD.replace("    return out;\n}", body + "\n    return out;\n}")

    def test_finding_points_into_the_string(self):
        code = self.cuda_with("    cudaStream_t s; cudaStreamCreate(&s);")
        result = check(code, "cuda")
        finding = next(f for f in result["findings"] if f["rule"] == "native-stream")
        line = code.splitlines()[finding["line"] - 1]
        self.assertEqual(line[finding["col"] - 1:].split("(")[0], "cudaStreamCreate")

    def test_comments_do_not_count(self):
        self.assertEqual(check(self.cuda_with("    // no cudaStreamCreate, no std::thread\n"
                                              "    /* PyRun_SimpleString */"), "cuda")["status"],
                         "pass")

    def test_split_names_are_read_whole(self):
        code = CUDA_ADD.replace('add_cpp_source = "', 'add_cpp_source = "cudaStream" + "Create;" + "')
        self.assertIn("native-stream", rule_ids(check(code, "cuda")))

    def test_legitimate_parallelism_and_queries(self):
        code = client.candidate_code("relu_cpp").replace(
            "#include <cstdint>",
            "#include <cstdint>\n#include <thread>\nstatic const unsigned cores = "
            "std::thread::hardware_concurrency();")
        self.assertIn("#pragma omp parallel for", code)
        self.assertEqual(check(code, "cpp")["status"], "pass", check(code, "cpp"))
        self.assertEqual(check(self.cuda_with(
            "    auto stream = at::cuda::getCurrentCUDAStream();\n"
            "    auto copy = a.contiguous().view({-1}).to(torch::kFloat32);"), "cuda")["status"],
            "pass")

    def test_torch_cpp_compute_and_vendor_libraries(self):
        self.assertIn("native-torch-compute",
                      rule_ids(check(self.cuda_with("    out = at::matmul(a, b);"), "cuda")))
        self.assertIn("native-torch-compute",
                      rule_ids(check(self.cuda_with("    out = a.sigmoid();"), "cuda")))
        self.assertIn("native-library-compute",
                      rule_ids(check(self.cuda_with("    cublasSgemm(h, 0, 0, 1, 1, 1, 0, 0, 1, 0, 1, 0, 0, 1);"),
                                     "cuda")))

    def test_templated_sources_are_read(self):
        code = CUDA_ADD.replace("(a.numel() + 255) / 256, 256", "(a.numel() + T - 1) / T, T")
        code = code.replace('add_cpp_source = "', 'full_source = ("#define T " + f"{THREADS}" + '
                            '"\\n" + add_source.replace("add_kernel", "{}_kernel".format("sum")))\n'
                            'add_cpp_source = "').replace("cuda_sources=add_source",
                                                         "cuda_sources=full_source")
        code = code.replace("add_source = \"\"\"", "THREADS = 2 ** 8\nadd_source = \"\"\"")
        self.assertIn("THREADS = 2 ** 8", code)
        result = check(code, "cuda")
        self.assertEqual(result["status"], "pass", result["findings"])
        self.assertIn("#define T 256\n", result["extracted"]["cuda_source"])
        self.assertIn("sum_kernel<<<", result["extracted"]["cuda_source"])

    def test_source_l1_cannot_read_is_rejected(self):
        code = CUDA_ADD.replace("cuda_sources=add_source", "cuda_sources=open('k.cu').read()")
        self.assertIn("native-source-unresolved", rule_ids(check(code, "cuda")))
        code = CUDA_ADD.replace("cuda_sources=add_source",
                                "cuda_sources=add_source.replace('256', str(len(__doc__ or '')))")
        self.assertIn("native-source-unresolved", rule_ids(check(code, "cuda")))
        code = CUDA_ADD.replace("load_inline(name=\"add\", cpp_sources=add_cpp_source, "
                                "cuda_sources=add_source,\n                  functions=[\"add_cuda\"], "
                                "verbose=False)",
                                "torch.utils.cpp_extension.load(name='add', sources=['add.cu'])")
        self.assertIn("sources=['add.cu']", code)
        self.assertIn("native-source-unresolved", rule_ids(check(code, "cuda")))


class AnalysisTest(unittest.TestCase):
    """What ModuleFacts.values answers, on small programs."""

    def values_of(self, code, expression):
        tree = ast.parse(textwrap.dedent(code))
        facts = ModuleFacts(tree, textwrap.dedent(code))
        target = next(n for n in ast.walk(tree) if isinstance(n, ast.expr)
                      and ast.unparse(n) == expression and isinstance(n, ast.Call))
        return facts.values(target.func)

    def test_arguments_flow_into_parameters(self):
        values = self.values_of("""
            import triton
            @triton.jit
            def k(x):
                pass
            def launch(kernel, x):
                kernel[(1,)](x)
            launch(k, 1)
            """, "kernel[1,](x)")
        self.assertEqual(values, {Launcher()})

    def test_what_a_container_is_given_later_is_in_it(self):
        values = self.values_of("""
            import torch
            ops = []
            ops.append(torch.tanh)
            ops[0](1)
            """, "ops[0](1)")
        self.assertEqual(values, {Mod("torch.tanh")})

    def test_cycles_answer_opaque_not_nothing(self):
        values = self.values_of("""
            import torch
            a = torch
            b = a
            a = b
            a.relu(1)
            """, "a.relu(1)")
        self.assertIn(Mod("torch.relu"), values)
        self.assertIn(Opaque("relu"), values)

    def test_self_holding_containers_and_long_chains_end(self):
        values = self.values_of("""
            box = []
            box.append(box)
            box[0][0](1)
            """, "box[0][0](1)")
        self.assertEqual([type(v).__name__ for v in values], ["Container"])  # box itself
        chain = "import torch\na0 = torch\n" + "".join(f"a{i} = a{i - 1}\n" for i in range(1, 400))
        values = self.values_of(chain + "a399.relu(1)\n", "a399.relu(1)")
        self.assertTrue(values & {Mod("torch.relu"), Opaque("relu")}, values)
        code = triton_with("y = torch.empty_like(x)\nlaunch(x, y)\nreturn a399.relu(y)\n",
                           extra=chain.replace("import torch\n", ""))
        self.assertEqual(check(code).get("error_class"), protocol.CHECKER_REJECTED)

    def test_native_libraries_and_their_functions(self):
        values = self.values_of("""
            import kforge_cpp
            class M:
                def __init__(self):
                    self.lib = kforge_cpp.load("x")
                def run(self):
                    getattr(self.lib, NAME)(1)
            """, "getattr(self.lib, NAME)(1)")
        self.assertEqual(values, {Native("cpp", True)})

    def test_kernels_and_functions(self):
        code = """
            import triton
            @triton.autotune(configs=[], key=[])
            @triton.jit
            def k(x):
                pass
            def f():
                return k
            f()(1)
            """
        self.assertTrue(all(isinstance(v, Func) for v in self.values_of(code, "f()")))
        kernels = self.values_of(code, "f()(1)")
        self.assertEqual(len(kernels), 1)
        self.assertIsInstance(next(iter(kernels)), Kernel)


class RulesFileTest(unittest.TestCase):
    def write_rules(self, text):
        handle = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
        handle.write(textwrap.dedent(text))
        handle.close()
        self.addCleanup(os.unlink, handle.name)
        return handle.name

    def test_user_rules_add_and_switch_off(self):
        path = self.write_rules("""
            rules:
              - id: no-print
                kind: use
                scope: forward
                match: [builtins.print]
                message: "forward prints with {name}"
                hint: "remove the print"
              - id: try-in-forward
                kind: try
                message: "off"
                enabled: false
        """)
        code = triton_with("print(x)\ntry:\n    launch(x, x)\nexcept RuntimeError:\n    raise\n"
                           "return x\n")
        result = check(code, rules_file=path)
        self.assertEqual(rule_ids(result), {"no-print"})
        self.assertEqual(result["findings"][0]["message"], "forward prints with builtins.print")

    def test_a_replaced_rule_keeps_its_place(self):
        path = self.write_rules("""
            rules:
              - id: side-stream
                kind: use
                match: ["torch.cuda.Stream"]
                message: "custom {name}"
        """)
        result = check(triton_with("s = torch.cuda.Stream()\nlaunch(x, x)\nreturn x\n"),
                       rules_file=path)
        self.assertEqual([f["message"] for f in result["findings"]], ["custom torch.cuda.Stream"])

    def test_a_warning_does_not_hide_a_later_error_at_the_same_place(self):
        path = self.write_rules("""
            rules:
              - id: side-stream
                kind: use
                match: ["torch.cuda.Stream"]
                message: "note {name}"
                severity: warning
        """)
        result = check(triton_with("s = torch.cuda.Stream()\nlaunch(x, x)\nreturn x\n"),
                       rules_file=path)
        self.assertEqual(result["error_class"], protocol.CHECKER_REJECTED)
        self.assertEqual(rule_ids(result), {"side-stream", "torch-compute"})

    def test_warning_rules_report_without_rejecting(self):
        path = self.write_rules("""
            rules:
              - id: note-contiguous
                kind: method
                match: [contiguous]
                message: "forward copies with {name}"
                severity: warning
        """)
        result = check(TRITON_RELU, rules_file=path)
        self.assertEqual(result["status"], "pass")
        self.assertEqual(rule_ids(result), {"note-contiguous"})

    def test_bad_rules_file_is_a_harness_error_with_its_place(self):
        path = self.write_rules("rules:\n  - id: x\n    kind: telepathy\n    message: m\n")
        with self.assertRaises(protocol.Verdict) as caught:
            check(TRITON_RELU, rules_file=path)
        self.assertEqual(caught.exception.error_class, protocol.HARNESS_ERROR)
        self.assertIn(f"{path}:2:5: rule #1 (x): unknown kind 'telepathy'",
                      caught.exception.message)
        path = self.write_rules("rules:\n  - id: y\n    kind: [string_pattern\n")
        with self.assertRaises(protocol.Verdict) as caught:
            check(TRITON_RELU, rules_file=path)
        self.assertIn(f"{path}:4:1: the rules file is not valid YAML", caught.exception.message)
        path = self.write_rules("rules:\n  - id: y\n    kind: string_pattern\n    message: m\n"
                                "    match: ['(']\n")
        with self.assertRaises(protocol.Verdict) as caught:
            check(TRITON_RELU, rules_file=path)
        self.assertIn("bad regular expression '('", caught.exception.message)

    def test_default_rules_load(self):
        rules = checker.load_rules()
        self.assertIn("torch-compute", {rule.id for rule in rules})
        self.assertEqual(len({rule.id for rule in rules}), len(rules))

    def test_dotted_name_patterns(self):
        self.assertTrue(checker.path_matches("torch", "torch.**"))
        self.assertTrue(checker.path_matches("torch.nn.functional.relu", "torch.**"))
        self.assertTrue(checker.path_matches("torch.nn.Linear", "torch.nn.[A-Z]*"))
        self.assertFalse(checker.path_matches("torch.nn.Linear.forward", "torch.nn.[A-Z]*"))
        self.assertFalse(checker.path_matches("torch.nn.functional.relu", "torch.nn.[A-Z]*"))
        self.assertTrue(checker.path_matches("os.spawnl", "os.spawn*"))
        self.assertFalse(checker.path_matches("os.path.join", "os.spawn*"))


if __name__ == "__main__":
    unittest.main()
