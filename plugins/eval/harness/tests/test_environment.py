"""The environment the server reports in its ready line (environment.py)."""

import json
import os
import stat
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

from kforge_harness.devices import environment
from kforge_harness.devices import Device

HARNESS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _fake_tool(directory, name, output, status=0):
    path = os.path.join(directory, name)
    with open(path, "w", encoding="utf-8") as script:
        # echo is the shell's own: the tests run these with nothing else on PATH.
        script.write("#!/bin/sh\n" + "".join(f"echo '{line}'\n" for line in output.splitlines()) +
                     f"exit {status}\n")
    os.chmod(path, stat.S_IRWXU)


class DescribeTest(unittest.TestCase):
    def test_cpu_server_reports_versions_and_host_without_gpu_fields(self):
        import torch
        facts = environment.describe(Device("cpu"), torch, "3.1.0")
        self.assertEqual(facts["device"], "cpu")
        self.assertEqual(facts["torch"], torch.__version__)
        self.assertEqual(facts["triton"], "3.1.0")
        self.assertEqual(facts["python"], sys.version.split()[0])
        self.assertTrue(facts["host"])
        self.assertNotIn("gpu", facts)
        self.assertNotIn("driver", facts)
        self.assertTrue(all(isinstance(value, str) and value for value in facts.values()))

    def test_missing_tools_leave_their_fields_out(self):
        import torch
        with tempfile.TemporaryDirectory() as empty, mock.patch.dict(os.environ, {"PATH": empty}):
            facts = environment.describe(Device("cuda:0"), torch, None)
        for field in ("gpu", "driver", "nvcc", "cxx", "triton"):
            self.assertNotIn(field, facts)

    def test_gpu_model_and_driver_come_from_nvidia_smi_for_the_visible_device(self):
        with tempfile.TemporaryDirectory() as tools:
            # Answers only for physical GPU 3: CUDA_VISIBLE_DEVICES=5,3 makes cuda:1 that one.
            path = os.path.join(tools, "nvidia-smi")
            with open(path, "w", encoding="utf-8") as script:
                script.write('#!/bin/sh\n[ "$1" = "--id=3" ] || exit 6\n'
                             'echo "NVIDIA H100 80GB HBM3, 570.86.15"\n')
            os.chmod(path, stat.S_IRWXU)
            env = {"PATH": tools, "CUDA_VISIBLE_DEVICES": "5,3"}
            with mock.patch.dict(os.environ, env):
                self.assertEqual(environment.nvidia_gpu(1), ("NVIDIA H100 80GB HBM3", "570.86.15"))
                self.assertEqual(environment.nvidia_gpu(0), (None, None))
                self.assertEqual(environment.nvidia_gpu(2), (None, None))

    def test_gpu_uuid_comes_from_nvidia_smi_for_the_visible_device(self):
        with tempfile.TemporaryDirectory() as tools:
            path = os.path.join(tools, "nvidia-smi")
            with open(path, "w", encoding="utf-8") as script:
                script.write('#!/bin/sh\n[ "$1" = "--id=3" ] && [ "$2" = "--query-gpu=uuid" ] || exit 6\n'
                             'echo "GPU-8f0c4c5e-1d2a-4b3c-9e8f-0a1b2c3d4e5f"\n')
            os.chmod(path, stat.S_IRWXU)
            with mock.patch.dict(os.environ, {"PATH": tools, "CUDA_VISIBLE_DEVICES": "3"}):
                self.assertEqual(environment.nvidia_gpu_uuid(0), "GPU-8f0c4c5e-1d2a-4b3c-9e8f-0a1b2c3d4e5f")
                self.assertIsNone(environment.nvidia_gpu_uuid(1))

    def test_host_is_the_slurm_node_inside_a_job_step(self):
        import torch
        with mock.patch.dict(os.environ, {"SLURMD_NODENAME": "gpu07"}):
            self.assertEqual(environment.describe(Device("cpu"), torch, None)["host"], "gpu07")

    def test_nvcc_release_is_parsed(self):
        with tempfile.TemporaryDirectory() as tools:
            _fake_tool(tools, "nvcc", "nvcc: NVIDIA (R) Cuda compiler driver\n"
                                      "Cuda compilation tools, release 12.4, V12.4.131")
            with mock.patch.dict(os.environ, {"PATH": tools}):
                self.assertEqual(environment._nvcc_release(), "12.4 (V12.4.131)")


class ReadyLineTest(unittest.TestCase):
    def test_the_servers_ready_line_carries_the_environment(self):
        server = subprocess.Popen([sys.executable, "-m", "kforge_harness", "serve", "--device", "cpu"],
                                  cwd=HARNESS_DIR, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            ready = json.loads(server.stdout.readline())
        finally:
            server.stdin.close()
            server.wait(timeout=60)
        self.assertTrue(ready["ready"])
        self.assertEqual(ready["environment"]["device"], "cpu")
        self.assertEqual(ready["environment"]["torch"], ready["torch"])


if __name__ == "__main__":
    unittest.main()
