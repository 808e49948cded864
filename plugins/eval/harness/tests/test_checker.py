"""The L1 static checker, in process (no candidate code runs)."""

import os
import tempfile
import textwrap
import unittest

from kforge_harness import checker, protocol
from tests import client

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


def triton_with(forward_body, extra=""):
    """TRITON_RELU with forward's body replaced."""
    head = TRITON_RELU.split("    def forward(self, x):")[0]
    return head + extra + "    def forward(self, x):\n" + textwrap.indent(
        textwrap.dedent(forward_body), "        ")


def check(code, language="triton", task="relu", rules_file=None):
    return checker.check(code, language, client.task_path(task), rules_file)


def rule_ids(result):
    return {finding["rule"] for finding in result["findings"]}


class StructureTest(unittest.TestCase):
    def test_correct_candidates_pass(self):
        self.assertEqual(check(TRITON_RELU)["status"], "pass", check(TRITON_RELU))
        self.assertEqual(check(CUDA_ADD, "cuda")["status"], "pass", check(CUDA_ADD, "cuda"))
        for name, task in (("relu_cpp", "relu"), ("linear_cpp", "linear")):
            result = check(client.candidate_code(name), "cpp", task)
            self.assertEqual(result["status"], "pass", result)

    def test_bundled_gpu_candidates_pass_l1(self):
        """The GPU candidates shipped in examples/, broken ones included: their failures
        (compile, device fault, wrong numbers) are for L2 and L3 to find, so L1 must let
        them through. CI has no GPU; this is what of them it can check."""
        suite = os.path.normpath(os.path.join(client.HARNESS_DIR, "..", "..", "..", "examples",
                                              "kernelbench-mini"))
        seen = 0
        for folder, language in (("triton", "triton"), ("broken_triton", "triton"),
                                 ("cuda", "cuda"), ("broken_cuda", "cuda")):
            directory = os.path.join(suite, "candidates", folder)
            for name in sorted(os.listdir(directory)):
                task = name.split("__", 1)[-1][:-3].split(".")[0]
                with open(os.path.join(directory, name), encoding="utf-8") as handle:
                    code = handle.read()
                result = checker.check(code, language, os.path.join(suite, "tasks", task + ".py"))
                self.assertEqual(result["status"], "pass", f"{folder}/{name}: {result}")
                seen += 1
        self.assertGreaterEqual(seen, 29)

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


class AntiCheatTest(unittest.TestCase):
    def assertRejected(self, code, rule, language="triton"):
        result = check(code, language)
        self.assertEqual(result["error_class"], protocol.CHECKER_REJECTED, result)
        self.assertIn(rule, rule_ids(result))
        finding = next(f for f in result["findings"] if f["rule"] == rule)
        self.assertGreater(finding["line"], 0)
        self.assertTrue(finding["hint"])
        return finding

    def test_torch_functions_in_forward(self):
        finding = self.assertRejected(triton_with("return torch.relu(x)\n"),
                                      "torch-compute-in-forward")
        self.assertIn("torch.relu", finding["message"])
        self.assertRejected(triton_with("return F.relu(x)\n").replace(
            "import torch\n", "import torch\nimport torch.nn.functional as F\n", 1),
            "torch-compute-in-forward")
        self.assertRejected(triton_with("return getattr(torch, 'relu')(x)\n"),
                            "torch-compute-in-forward")

    def test_torch_reached_through_a_helper_function(self):
        code = TRITON_RELU.replace("    relu_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)",
                                   "    y.copy_(torch.clamp(x, min=0))")
        self.assertRejected(code, "torch-compute-in-forward")

    def test_allocation_and_views_are_allowed(self):
        body = """
        x = x.contiguous().view(-1)
        y = torch.empty_like(x)
        z = torch.zeros(x.numel(), device=x.device, dtype=x.dtype)
        launch(x, y)
        return y.reshape(x.shape).to(torch.float32)
        """
        self.assertEqual(check(triton_with(body))["status"], "pass")

    def test_tensor_methods_and_matmul_operator(self):
        self.assertRejected(triton_with("return x.sum(dim=1)\n"), "tensor-method-in-forward")
        self.assertRejected(triton_with("x.mul_(2)\nreturn x\n"), "tensor-method-in-forward")
        self.assertRejected(triton_with("return x @ x.t()\n"), "matmul-operator-in-forward")

    def test_torch_layer_called_in_forward(self):
        code = TRITON_RELU.replace("        super().__init__()\n",
                                   "        super().__init__()\n"
                                   "        self.act = torch.nn.ReLU()\n")
        code = code.replace("        launch(x, y)\n        return y",
                            "        return self.act(x)")
        self.assertRejected(code, "torch-layer-call")

    def test_layer_kept_for_its_weights_is_fine(self):
        code = client.candidate_code("linear_cpp")
        self.assertEqual(check(code, "cpp", "linear")["status"], "pass")

    def test_reference_model_use(self):
        code = TRITON_RELU.replace("class ModelNew(torch.nn.Module):",
                                   "class Model(torch.nn.Module):\n    pass\n\n\n"
                                   "class ModelNew(Model):")
        self.assertRejected(code, "reference-model-use")
        self.assertRejected(triton_with("return Model()(x)\n"), "reference-model-use")

    def test_try_fallback(self):
        result = check(client.candidate_code("torch_fallback"), "cpp")
        self.assertTrue({"try-in-forward", "torch-compute-in-forward"} <= rule_ids(result))

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

    def test_introspection_and_dynamic_code(self):
        self.assertRejected("import gc\n" + triton_with("gc.get_objects()\nreturn x\n"),
                            "introspection")
        self.assertRejected(TRITON_RELU + "\nexec('x = 1')\n", "dynamic-code")


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
                kind: call
                match: [print]
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
        self.assertEqual(result["findings"][0]["message"], "forward prints with print")

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

    def test_bad_rules_file_is_a_harness_error(self):
        path = self.write_rules("rules:\n  - id: x\n    kind: telepathy\n    message: m\n")
        with self.assertRaises(protocol.Verdict) as caught:
            check(TRITON_RELU, rules_file=path)
        self.assertEqual(caught.exception.error_class, protocol.HARNESS_ERROR)
        self.assertIn("rule #1 (x): unknown kind 'telepathy'", caught.exception.message)

    def test_default_rules_load(self):
        rules = checker.load_rules()
        self.assertIn("torch-compute-in-forward", {rule.id for rule in rules})
        self.assertEqual(len({rule.id for rule in rules}), len(rules))


if __name__ == "__main__":
    unittest.main()
