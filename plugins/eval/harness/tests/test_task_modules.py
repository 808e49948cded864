"""A task's own helper modules (task_modules.py): a task that imports modules from beside
it, outside the Python installation, is judged as its reference ran, and the candidate is
never blamed for a helper its sandbox cannot see. The task trees are written to a
temporary directory: the harness's own directory (and so tests/data) is shown in every
sandbox, which would hide the fault."""

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

from kforge_harness.tasks import kbx, task_modules
from kforge_harness import protocol
from tests import client
from tests.client import HARNESS_DIR, request
from tests.test_kbx import KBX_RULE

SEPARATOR = "#" * 146

# KernelBenchX's layout: data/kernelbenchx/<category>/<task>.py imports from utils/.
KBX_TASK = f'''import torch

def scaled_tanh(input, scale=2.0):
    return torch.tanh(input) * scale

{SEPARATOR}

import torch
import sys
import os
sys.path.append(os.path.abspath("utils"))
sys.path.append(os.path.abspath(os.path.join(os.path.dirname(__file__), "../../../utils")))
from kforge_test_data_utils import rand_tensor

def test_scaled_tanh():
    results = {{"test_case_1": scaled_tanh(torch.tensor([-1.0, 0.0, 1.0]))}}
    for mode in ("standard", "outlier"):
        results[f"test_random_{{mode}}"] = [scaled_tanh(rand_tensor((32, 32), mode=mode))
                                             for _ in range(2)]
    return results

test_results = test_scaled_tanh()
'''

DATA_UTILS = '''import torch

def rand_tensor(shape, mode="standard"):
    x = torch.randn(*shape)
    if mode == "outlier":
        x = torch.where(torch.rand(*shape) < 0.01, x * 50.0, x)
    return x
'''

# A KernelBench task whose Model and inputs come from a package beside it.
KB_TASK = '''import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kforge_test_helpers.layers import relu_model, inputs

Model = relu_model


def get_inputs():
    return inputs()


def get_init_inputs():
    return []
'''

HELPERS_INIT = "SCALE = 1\n"
HELPERS_LAYERS = '''import torch

from . import SCALE


class relu_model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x) * SCALE


def inputs():
    return [torch.randn(64, 64)]
'''


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


class TaskModulesServerTest(client.SharedServerTest):
    @classmethod
    def setUpClass(cls):
        cls.root = tempfile.mkdtemp(prefix="kforge-task-modules-")
        kbx_root = os.path.join(cls.root, "KernelBenchX")
        write(os.path.join(kbx_root, "utils", "kforge_test_data_utils.py"), DATA_UTILS)
        cls.kbx_task = os.path.join(kbx_root, "data", "kernelbenchx", "Activation", "scaled_tanh")
        write(cls.kbx_task + ".py", KBX_TASK)
        kb_root = os.path.join(cls.root, "level1")
        write(os.path.join(kb_root, "kforge_test_helpers", "__init__.py"), HELPERS_INIT)
        write(os.path.join(kb_root, "kforge_test_helpers", "layers.py"), HELPERS_LAYERS)
        cls.kb_task = os.path.join(kb_root, "1_relu_from_helpers")
        write(cls.kb_task + ".py", KB_TASK)
        cands = os.path.join(cls.root, "candidates")
        write(os.path.join(cands, "honest.py"),
              "import torch\n\ndef scaled_tanh(input, scale=2.0):\n    return 2.0 * torch.tanh(input) * (scale / 2.0)\n")
        write(os.path.join(cands, "wrong.py"),
              "import torch\n\ndef scaled_tanh(input, scale=2.0):\n    return torch.tanh(input)\n")
        cls.honest, cls.wrong = os.path.join(cands, "honest"), os.path.join(cands, "wrong")
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        shutil.rmtree(cls.root, ignore_errors=True)

    def kbx(self, request_id, candidate):
        return request(request_id, "run", self.kbx_task, candidate, language="python",
                       task_format=kbx.FORMAT, options={"rule": KBX_RULE})

    def test_a_kernelbenchx_task_importing_its_utils_judges_the_candidate_not_the_import(self):
        got = self.server.ask(self.kbx("ref", None), self.kbx("honest", self.honest),
                              self.kbx("wrong", self.wrong), timeout=300)
        for key in ("ref", "honest"):
            self.assertEqual((got[key]["status"], got[key]["error_class"]), ("pass", ""), got[key])
        self.assertEqual((got["wrong"]["status"], got["wrong"]["error_class"]),
                         ("fail", protocol.NUMERICAL_MISMATCH), got["wrong"])

    def test_a_kernelbench_task_importing_a_package_beside_it_passes_its_candidate(self):
        got = self.server.ask(request("relu", "run", self.kb_task, "python_relu", language="python"),
                              timeout=300)
        self.assertEqual((got["relu"]["status"], got["relu"]["error_class"]), ("pass", ""), got["relu"])


class CollectAndInstallTest(unittest.TestCase):
    """collect() in one interpreter, install() in another that cannot read the files."""

    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="kforge-task-modules-")
        self.addCleanup(shutil.rmtree, self.root, True)

    def run_python(self, code):
        env = dict(os.environ, PYTHONPATH=HARNESS_DIR)
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                              text=True, timeout=120, check=False)
        self.assertEqual(done.returncode, 0, done.stderr)
        return done.stdout

    def test_modules_from_outside_the_sandbox_s_view_travel_and_are_served_from_memory(self):
        write(os.path.join(self.root, "pkg", "__init__.py"), "BASE = 40\n")
        write(os.path.join(self.root, "pkg", "deep.py"), "from . import BASE\nVALUE = BASE + 2\n")
        write(os.path.join(self.root, "flat.py"), "def fails():\n    raise ValueError('from flat')\n")
        out = self.run_python(textwrap.dedent(f"""
            import json, sys
            from kforge_harness.tasks import task_modules
            before = task_modules.snapshot()
            sys.path.insert(0, {self.root!r})
            import json as shown_anyway  # the Python installation's: not carried
            import pkg.deep, flat
            print(json.dumps(task_modules.collect(before)))
        """))
        modules = __import__("json").loads(out)
        self.assertEqual(sorted(m["name"] for m in modules), ["flat", "pkg", "pkg.deep"])
        self.assertEqual({m["name"]: m["package"] for m in modules}["pkg"], True)
        shutil.rmtree(self.root)  # the candidate's side cannot read them
        served = self.run_python(textwrap.dedent(f"""
            import traceback
            from kforge_harness.tasks import task_modules
            task_modules.install({modules!r})
            import pkg.deep, flat
            print(pkg.deep.VALUE, pkg.deep.__file__ == {os.path.join(self.root, 'pkg', 'deep.py')!r})
            try:
                flat.fails()
            except ValueError:
                print("raise ValueError('from flat')" in traceback.format_exc())
        """))
        self.assertEqual(served.split(), ["42", "True", "True"])

    def test_a_compiled_module_or_too_much_source_is_the_task_s_error(self):
        write(os.path.join(self.root, "big.py"), "X = '" + "x" * (task_modules.MAX_BYTES + 10) + "'\n")
        out = self.run_python(textwrap.dedent(f"""
            import sys
            from kforge_harness import protocol
            from kforge_harness.tasks import task_modules
            before = task_modules.snapshot()
            sys.path.insert(0, {self.root!r})
            import big
            try:
                task_modules.collect(before)
            except protocol.Verdict as verdict:
                print(verdict.error_class, "MiB of source" in str(verdict))
        """))
        self.assertEqual(out.split(), [protocol.TASK_ERROR, "True"])
        not_source = os.path.join(self.root, "native.so")
        write(not_source, "")
        out = self.run_python(textwrap.dedent(f"""
            import sys, types
            from kforge_harness import protocol
            from kforge_harness.tasks import task_modules
            before = task_modules.snapshot()
            sys.path.insert(0, {self.root!r})
            module = types.ModuleType("native")
            module.__file__ = {not_source!r}
            sys.modules["native"] = module
            try:
                task_modules.collect(before)
            except protocol.Verdict as verdict:
                print(verdict.error_class, "not Python source" in str(verdict))
        """))
        self.assertEqual(out.split(), [protocol.TASK_ERROR, "True"])

    def test_modules_a_library_loads_from_its_own_cache_are_not_the_task_s(self):
        # Triton loads its compiled launcher (cuda_utils.so) and TorchInductor its
        # generated code by file location from caches outside the sandbox's view, while
        # the reference runs; the candidate's process builds its own. Found on a GPU host,
        # where every Triton task's reference became a task_error.
        cache = os.path.join(self.root, "cache", "3f9a")
        write(os.path.join(cache, "cuda_utils.so"), "")
        write(os.path.join(cache, "c3generated.py"), "VALUE = 1\n")
        write(os.path.join(self.root, "cache", "flat_in_parent.py"), "VALUE = 2\n")
        out = self.run_python(textwrap.dedent(f"""
            import importlib.util, json, sys, types
            from kforge_harness.tasks import task_modules
            before = task_modules.snapshot()
            sys.path.append({os.path.join(self.root, "cache")!r})  # a parent of the cache on sys.path
            native = types.ModuleType("cuda_utils")
            native.__file__ = {os.path.join(cache, "cuda_utils.so")!r}
            sys.modules["cuda_utils"] = native
            spec = importlib.util.spec_from_file_location(
                "c3generated", {os.path.join(cache, "c3generated.py")!r})
            generated = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(generated)
            sys.modules["c3generated"] = generated
            import flat_in_parent
            print(json.dumps([m["name"] for m in task_modules.collect(before)]))
        """))
        self.assertEqual(__import__("json").loads(out), ["flat_in_parent"])


if __name__ == "__main__":
    unittest.main()
