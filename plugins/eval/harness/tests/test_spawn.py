"""spawn mode's candidate child: a fresh interpreter that must enter its sandbox before it
imports anything that starts threads, and whose sandbox must show what the server's
imports need (issue 9).

On a GPU host importing torch starts threads (CUDA, OpenMP), and numpy's OpenBLAS does
on a many-core machine; on a small CPU machine neither may. The tests do not depend on
which: a sitecustomize makes every interpreter they start behave like the GPU host's,
starting a thread when torch or numpy is imported."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from tests import client
from tests.client import request

HOOK = '''
import importlib.abc
import mmap
import os
import sys
import threading
import time


class _ThreadsAtImport(importlib.abc.MetaPathFinder):
    """What torch and numpy do at import on a GPU host: start a thread."""

    started = False

    def find_spec(self, name, path=None, target=None):
        if name in ("torch", "numpy") and not self.started:
            _ThreadsAtImport.started = True
            threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()
        return None


sys.meta_path.insert(0, _ThreadsAtImport())

# A file only the server maps, the way its imports map libraries that a fresh child's
# own imports (none, before its sandbox) do not.
if "serve" in sys.argv and os.environ.get("KFORGE_TEST_SERVER_MAPS"):
    with open(os.environ["KFORGE_TEST_SERVER_MAPS"], "rb") as _handle:
        _SERVER_ONLY = mmap.mmap(_handle.fileno(), 0, prot=mmap.PROT_READ)
'''

# Reads the server-only file: it is inside the sandbox only if the sandbox shows what the
# server mapped.
CANDIDATE = '''
import torch


class ModelNew(torch.nn.Module):
    def __init__(self, *args):
        super().__init__()
        with open({path!r}, "rb") as handle:
            self.marker = handle.read()

    def forward(self, x):
        return torch.relu(x)
'''


class SpawnedChildTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.base = tempfile.mkdtemp(prefix="kforge-spawn-test-")
        os.chmod(cls.base, 0o755)  # the sandbox's uid outside is not this one
        hook_dir = os.path.join(cls.base, "hook")
        os.mkdir(hook_dir)
        with open(os.path.join(hook_dir, "sitecustomize.py"), "w", encoding="utf-8") as handle:
            handle.write(HOOK)
        cls.library_dir = os.path.join(cls.base, "server-only")
        os.mkdir(cls.library_dir)
        cls.server_only = os.path.join(cls.library_dir, "libserveronly.so")
        with open(cls.server_only, "wb") as handle:
            handle.write(b"kforge" * 1024)
        cls.env = {"PYTHONPATH": os.pathsep.join((client.HARNESS_DIR, hook_dir)),
                   "KFORGE_TEST_SERVER_MAPS": cls.server_only}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.base, ignore_errors=True)

    def test_the_hook_starts_a_thread_when_torch_is_imported(self):
        # The premise of the test below: without it, the test could not fail.
        counted = subprocess.run(
            [sys.executable, "-c", "import os, torch; print(len(os.listdir('/proc/self/task')))"],
            env={**os.environ, **self.env}, capture_output=True, text=True, check=True)
        self.assertGreater(int(counted.stdout), 1)

    def test_a_spawned_child_enters_before_torch_starts_threads_and_sees_the_servers_view(self):
        server = client.Server(mode="spawn", max_children=1, extra_env=self.env)
        self.addCleanup(server.close)
        self.assertTrue(server.ready.get("ready"), server.ready)
        ask = request("spawned", "run", "relu", "python_relu", language="python",
                      limits={"timeout_s": 120})
        ask["candidate"]["code"] = CANDIDATE.format(path=self.server_only)
        response = server.ask(ask, timeout=300)["spawned"]
        self.assertEqual(response["status"], "pass", response)
        self.assertNotIn("sandbox_not_entered", response.get("flags", []))

    def test_the_spawn_entry_imports_nothing_that_starts_threads_before_the_sandbox(self):
        # What `python -m kforge_harness child` has loaded when it calls sandbox.enter().
        loaded = subprocess.run(
            [sys.executable, "-c", "import sys\n"
             "from kforge_harness import __main__, sandbox\n"
             "from kforge_harness.server import child\n"
             "print(' '.join(sorted(sys.modules)))"],
            env={**os.environ, "PYTHONPATH": client.HARNESS_DIR}, capture_output=True,
            text=True, check=True).stdout.split()
        for module in ("torch", "numpy", "triton"):
            self.assertNotIn(module, loaded)


if __name__ == "__main__":
    unittest.main()
