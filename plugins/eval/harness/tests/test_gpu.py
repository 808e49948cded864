"""The harness on a CUDA GPU with Triton candidates. Skipped where this interpreter has no
CUDA device or no triton (CI); run on a GPU host with the same command as the suite."""

import importlib.util
import json
import unittest

import torch

from tests import client
from tests.client import request

HAS_GPU = torch.cuda.is_available() and importlib.util.find_spec("triton") is not None


def triton_run(request_id, task, candidate, **fields):
    return request(request_id, "run", task, candidate, language="triton", **fields)


# (request id, request, expected status, expected error class, text the message holds)
CASES = [
    ("relu-pass", triton_run("relu-pass", "relu", "triton_relu"), "pass", "", ""),
    ("illegal-access", triton_run("illegal-access", "relu", "triton_illegal_access"),
     "fail", "device_error", "illegal memory access"),
    ("compile-error", triton_run("compile-error", "relu", "triton_compile_error"),
     "fail", "compile_error", "no_such_function"),
    ("device-oom", triton_run("device-oom", "relu", "triton_device_oom"),
     "fail", "out_of_memory", ""),
    ("numpy-pass", triton_run("numpy-pass", "relu_numpy", "triton_relu",
                              task_format="kernelbench-numpy"), "pass", "", ""),
    ("relu-reference", request("relu-reference", "run", "relu"), "pass", "", ""),
    ("linear-reference", request("linear-reference", "run", "linear"), "pass", "", ""),
    ("check", request("check", "check", "relu", "triton_relu", language="triton"),
     "pass", "", ""),
    ("compile", request("compile", "compile", "relu", "triton_relu", language="triton"),
     "pass", "", ""),
    ("timed", triton_run("timed", "relu", "triton_relu",
                         options={"timing": {"enabled": True, "warmup": 3, "trials": 20,
                                             "baseline": "compile"}},
                         limits={"timeout_s": 300}), "pass", "", ""),
]


@unittest.skipUnless(HAS_GPU, "needs a CUDA device and triton")
class CudaTritonTest(unittest.TestCase):
    mode = "fork"

    @classmethod
    def setUpClass(cls):
        # One child at a time: a device fault must not take a neighbour with it, and the
        # illegal-access case must be followed by healthy jobs on the same GPU.
        cls.server = client.Server(mode=cls.mode, device="cuda:0", max_children=1)
        cls.responses = cls.server.ask(*[case[1] for case in CASES], timeout=600)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def test_every_case_lands_in_its_class(self):
        for case_id, _, status, error_class, text in CASES:
            with self.subTest(case=case_id):
                response = self.responses[case_id]
                detail = json.dumps(response, indent=1)[:3000]
                self.assertEqual(response["status"], status, detail)
                self.assertEqual(response["error_class"], error_class, detail)
                self.assertIn(text, response["message"], detail)

    def test_a_device_fault_does_not_poison_the_next_job(self):
        again = self.server.ask(triton_run("after-fault", "relu", "triton_relu"))
        self.assertEqual(again["after-fault"]["status"], "pass", again)

    def test_timing_metrics(self):
        metrics = self.responses["timed"]["metrics"]
        for key in ("candidate_ms", "reference_ms", "speedup", "compile_ms",
                    "speedup_vs_compile"):
            self.assertGreater(metrics[key], 0, metrics)

    def test_children_run_without_network(self):
        self.assertNotIn("network_not_isolated", self.responses["relu-pass"]["flags"])

    def test_reports_for_the_log(self):
        # Printed so that a run on the GPU host leaves the numbers in its output.
        for case_id, _, _, _, _ in CASES:
            response = self.responses[case_id]
            print(f"\n{self.mode} {case_id}: {response['status']} {response['error_class']} "
                  f"{response['message'][:160]!r} {json.dumps(response['metrics'])}")


@unittest.skipUnless(HAS_GPU, "needs a CUDA device and triton")
class CudaSpawnTest(unittest.TestCase):
    def test_spawn_mode_gives_the_same_verdicts(self):
        server = client.Server(mode="spawn", device="cuda:0", max_children=1)
        try:
            picked = [case for case in CASES
                      if case[0] in ("relu-pass", "illegal-access", "compile-error")]
            responses = server.ask(*[case[1] for case in picked], timeout=600)
        finally:
            server.close()
        for case_id, _, status, error_class, _ in picked:
            self.assertEqual((responses[case_id]["status"], responses[case_id]["error_class"]),
                             (status, error_class), responses[case_id])


if __name__ == "__main__":
    unittest.main()
