"""kforge_cpp: compile-and-cache, the L2 stage's artifact, compiler errors."""

import ctypes
import os
import shutil
import tempfile
import unittest
from unittest import mock

import torch

import kforge_cpp

SOURCE = r'''
#include <cstdint>
extern "C" int64_t add_one(int64_t v) { return v + 1; }
extern "C" void scale(const float* x, float* y, int64_t n, float k) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * k;
}
'''


class KforgeCppTest(unittest.TestCase):
    def setUp(self):
        self.cache = tempfile.mkdtemp(prefix="kforge-cpp-test-")
        self.addCleanup(shutil.rmtree, self.cache, ignore_errors=True)
        patcher = mock.patch.dict(os.environ, {"KFORGE_CPP_CACHE": self.cache})
        patcher.start()
        self.addCleanup(patcher.stop)
        os.environ.pop("KFORGE_CPP_ARTIFACT", None)

    def test_load_compiles_into_the_cache_by_hash(self):
        lib = kforge_cpp.load(SOURCE)
        self.assertEqual(lib.add_one(ctypes.c_int64(41)), 42)
        digest = kforge_cpp.source_digest(SOURCE)
        self.assertEqual(os.listdir(self.cache), [digest + ".so"])

    def test_without_a_configured_cache_no_two_processes_share_one(self):
        os.environ.pop("KFORGE_CPP_CACHE")
        own = kforge_cpp.cache_dir()  # made before the fork, as a server could
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.write(write_fd, kforge_cpp.cache_dir().encode())
            os._exit(0)
        os.close(write_fd)
        childs = os.read(read_fd, 4096).decode()
        os.close(read_fd)
        os.waitpid(pid, 0)
        self.addCleanup(shutil.rmtree, own, ignore_errors=True)
        self.addCleanup(shutil.rmtree, childs, ignore_errors=True)
        self.assertNotEqual(own, childs)  # a candidate cannot plant what another loads
        self.assertEqual(os.stat(own).st_mode & 0o777, 0o700)
        self.assertEqual(kforge_cpp.cache_dir(), own)

    def test_ptr_passes_tensors(self):
        lib = kforge_cpp.load(SOURCE)
        x, y = torch.arange(4, dtype=torch.float32), torch.empty(4)
        lib.scale(kforge_cpp.ptr(x), kforge_cpp.ptr(y), ctypes.c_int64(4), ctypes.c_float(2.0))
        self.assertEqual(y.tolist(), [0.0, 2.0, 4.0, 6.0])
        with self.assertRaises(TypeError):
            kforge_cpp.ptr([1, 2])

    def test_compile_error_keeps_file_and_line(self):
        with self.assertRaises(kforge_cpp.CompileError) as caught:
            kforge_cpp.load("extern \"C\" int f() {\n  return missing;\n}\n")
        self.assertIn("cpp_source.cpp:2:", str(caught.exception))
        self.assertIn("missing", str(caught.exception))
        self.assertEqual(os.listdir(self.cache), [])

    def stage_artifact(self, built_from, kept_source):
        """A library built from `built_from`, laid out as the C++ compile stage does:
        <key>.so with the compiled source beside it as <key>.cpp."""
        artifacts = tempfile.mkdtemp(prefix="kforge-artifact-")
        self.addCleanup(shutil.rmtree, artifacts, ignore_errors=True)
        artifact = os.path.join(artifacts, "0123abcd.so")
        kforge_cpp.compile_source(built_from, artifact)
        if kept_source is not None:
            with open(os.path.join(artifacts, "0123abcd.cpp"), "w", encoding="utf-8") as f:
                f.write(kept_source)
        return artifact

    def test_matching_artifact_is_loaded_without_compiling(self):
        # Built from another text than it claims: only loading it can give v + 2.
        artifact = self.stage_artifact(SOURCE.replace("v + 1", "v + 2"), SOURCE)
        with mock.patch.dict(os.environ, {"KFORGE_CPP_ARTIFACT": artifact}):
            self.assertEqual(kforge_cpp.load(SOURCE).add_one(ctypes.c_int64(1)), 3)
        self.assertEqual(os.listdir(self.cache), [])

    def test_artifact_of_another_source_is_ignored(self):
        other = SOURCE.replace("v + 1", "v + 2")
        for kept in (other, None):
            artifact = self.stage_artifact(other, kept)
            with mock.patch.dict(os.environ, {"KFORGE_CPP_ARTIFACT": artifact}):
                self.assertEqual(kforge_cpp.load(SOURCE).add_one(ctypes.c_int64(1)), 2)
        self.assertEqual(len(os.listdir(self.cache)), 1)


if __name__ == "__main__":
    unittest.main()
