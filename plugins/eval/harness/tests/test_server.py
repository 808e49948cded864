"""End-to-end: a real server (fork and spawn), real g++, every verdict class."""

import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import torch

import kforge_cpp
from kforge_harness.l1 import checker
from tests import client
from tests.client import request

# (request id, request, expected status, expected error class, text the message holds)
CASES = [
    ("relu-pass", request("relu-pass", "run", "relu", "relu_cpp"), "pass", "", ""),
    ("relu-reference", request("relu-reference", "run", "relu"), "pass", "", ""),
    ("linear-pass", request("linear-pass", "run", "linear", "linear_cpp"), "pass", "", ""),
    ("linear-reference", request("linear-reference", "run", "linear"), "pass", "", ""),
    ("numpy-pass", request("numpy-pass", "run", "relu_numpy", "relu_cpp",
                           task_format="kernelbench-numpy"), "pass", "", ""),
    ("numpy-reference", request("numpy-reference", "run", "relu_numpy",
                                task_format="kernelbench-numpy"), "pass", "", ""),
    ("mindspore-pass", request("mindspore-pass", "run", "relu_mindspore", "relu_cpp",
                               task_format="kernelbench-mindspore"), "pass", "", ""),
    ("mindspore-reference", request("mindspore-reference", "run", "relu_mindspore",
                                    task_format="kernelbench-mindspore"), "pass", "", ""),
    ("scaled-pass", request("scaled-pass", "run", "relu_huge", "relu_cpp",
                            size_scale=1 / 1024), "pass", "", ""),
    ("syntax-run", request("syntax-run", "run", "relu", "syntax_error"),
     "fail", "syntax_error", "kforge_candidate.py"),
    ("compile-error", request("compile-error", "run", "relu", "compile_error_cpp"),
     "fail", "compile_error", "cpp_source.cpp:4"),
    ("wrong-ctor", request("wrong-ctor", "run", "linear", "wrong_ctor"),
     "fail", "init_error", "TypeError"),
    ("exception", request("exception", "run", "relu", "exception"),
     "fail", "runtime_error", "the kernel refuses to run (kforge_candidate.py:24, in forward)"),
    ("segfault", request("segfault", "run", "relu", "segfault"), "fail", "crash", "SIGSEGV"),
    ("abort", request("abort", "run", "relu", "abort"), "fail", "crash", "SIGABRT"),
    # Its constructor compiles C++ (seconds on a loaded 2-core machine): the limit leaves
    # room for it, so that the loop in forward is what the limit ends.
    ("infinite-loop", request("infinite-loop", "run", "relu", "infinite_loop",
                              limits={"timeout_s": 8}), "fail", "timeout", "candidate forward"),
    ("huge-alloc", request("huge-alloc", "run", "relu", "huge_alloc",
                           limits={"memory_mb": 1024}), "fail", "out_of_memory", ""),
    ("nan-output", request("nan-output", "run", "relu", "nan_output"),
     "fail", "numerical_mismatch", "NaN"),
    ("zeros-wrong", request("zeros-wrong", "run", "relu", "zeros_output"),
     "fail", "numerical_mismatch", "max abs diff"),
    ("zeros-near-constant", request("zeros-near-constant", "run", "near_constant",
                                    "zeros_near_constant"), "error", "task_error",
     "carries no information"),
    ("mutate-input", request("mutate-input", "run", "relu", "mutate_input"),
     "fail", "cheat_detected", "changed input #0"),
    # The dynamic checks cannot see a fallback that is never taken: L1 rejects it.
    ("fallback-run", request("fallback-run", "run", "relu", "torch_fallback"), "pass", "", ""),
    ("fallback-check", request("fallback-check", "check", "relu", "torch_fallback"),
     "fail", "checker_rejected", "try"),
    ("syntax-check", request("syntax-check", "check", "relu", "syntax_error"),
     "fail", "syntax_error", "line 5"),
    ("compile-action", request("compile-action", "compile", "linear", "linear_cpp"),
     "pass", "", ""),
    # Where torch.compile exists, compiling the baseline on a CPU takes tens of seconds
    # (test_gpu.py covers it); Debian's torch 1.13 has none: the flag says so.
    ("timed", request("timed", "run", "linear", "linear_cpp",
                      options={"timing": {"enabled": True, "warmup": 1, "trials": 5,
                                          "baseline": "eager" if hasattr(torch, "compile")
                                          else "compile"}}), "pass", "", ""),
    # A spawned child pays interpreter start and torch import inside its time limit
    # (seconds on a loaded 2-core machine).
    ("infinite-loop-spawn", request("infinite-loop-spawn", "run", "relu", "infinite_loop",
                                    limits={"timeout_s": 20}), "fail", "timeout",
     "candidate forward"),
]

# Spawn mode pays a fresh interpreter (and torch import) per request: a subset that still
# reaches every way a child can end (a result, a signal, a timeout, a limit).
SPAWN_CASES = {"relu-pass", "segfault", "infinite-loop-spawn", "huge-alloc", "syntax-check"}
FORK_CASES = {case[0] for case in CASES} - {"infinite-loop-spawn"}


class VerdictsMixin:
    mode = None
    cases = None

    @classmethod
    def setUpClass(cls):
        cls.cache = tempfile.mkdtemp(prefix="kforge-test-cpp-")
        cls.server = client.Server(mode=cls.mode, max_children=2,
                                   extra_env={"KFORGE_CPP_CACHE": cls.cache})
        # The timeouts go first, so they run beside the rest instead of after it.
        picked = sorted((case for case in CASES if case[0] in cls.cases),
                        key=lambda case: "infinite" not in case[0])
        cls.responses = cls.server.ask(*[case[1] for case in picked], timeout=240)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()
        shutil.rmtree(cls.cache, ignore_errors=True)

    def test_ready_line(self):
        self.assertTrue(self.server.ready["ready"])
        self.assertEqual(self.server.ready["mode"], self.mode)
        self.assertEqual(self.server.ready["device"], "cpu")

    def test_every_case_lands_in_its_class(self):
        for case_id, _, status, error_class, text in CASES:
            if case_id not in self.cases:
                continue
            with self.subTest(case=case_id):
                response = self.responses[case_id]
                detail = json.dumps(response, indent=1)[:3000]
                self.assertEqual(response["status"], status, detail)
                self.assertEqual(response["error_class"], error_class, detail)
                self.assertIn(text, response["message"], detail)
                self.assertGreater(response["metrics"]["child_seconds"], 0)

    def test_extensions_build_in_the_childs_own_directory(self):
        # load_inline's build directory is the child's own (see child.candidate_main).
        message = self.server.ask(request("ext", "run", "relu", "extensions_dir_probe"))["ext"]["message"]
        found = re.search(r"extensions=(\S+) cwd=(\S+)", message)
        self.assertIsNotNone(found, message)
        extensions, cwd = found.groups()
        self.assertEqual(os.path.dirname(extensions), cwd, message)

    def test_server_survives_crashes(self):
        # The crashing children were answered before; the server still serves.
        self.assertIsNone(self.server.process.poll())
        again = self.server.ask(request("after-crash", "run", "relu", "relu_cpp"))
        self.assertEqual(again["after-crash"]["status"], "pass")


class IdleHostsTest(unittest.TestCase):
    """Which idle task hosts the server retires (server/hosts.py)."""

    def hosts(self, held_mb, keep_idle=8, idle_mb=8192):
        from kforge_harness.server.hosts import Hosts
        hosts = Hosts(keep_idle=keep_idle, idle_mb=idle_mb)
        for age, mb in enumerate(held_mb):  # the first the most recently used
            entry = hosts.entry(f"task-{age}")
            entry.proc, entry.held_mb, entry.last_used = object(), mb, 1000.0 - age
        return hosts

    def closed(self, hosts):
        return sorted(entry.key for entry in hosts.idle_to_close())

    def test_idle_hosts_beyond_the_count_are_retired(self):
        self.assertEqual(self.closed(self.hosts([10] * 5, keep_idle=3)), ["task-3", "task-4"])

    def test_idle_hosts_beyond_the_memory_budget_are_retired(self):
        # Four level-1 hosts each keeping a 6.4 GB output: one fits 8 GB.
        self.assertEqual(self.closed(self.hosts([6554] * 4)), ["task-1", "task-2", "task-3"])
        # One that alone holds more than the budget goes; a small one beside it stays.
        self.assertEqual(self.closed(self.hosts([9000, 10])), ["task-0"])

    def test_hosts_in_use_stay(self):
        hosts = self.hosts([6554] * 3)
        hosts.entries["task-2"].users = 1
        self.assertEqual(self.closed(hosts), ["task-1"])


class ForkServerTest(VerdictsMixin, unittest.TestCase):
    mode = "fork"
    cases = FORK_CASES

    def test_pass_carries_diff_metrics(self):
        metrics = self.responses["linear-pass"]["metrics"]
        self.assertEqual(metrics["trials"], 2)
        self.assertLess(metrics["max_abs_diff"], 1e-4)

    def test_timing_metrics(self):
        response = self.responses["timed"]
        for key in ("reference_ms", "candidate_ms", "candidate_ms_p90", "speedup"):
            self.assertGreater(response["metrics"][key], 0, response)
        if not hasattr(torch, "compile"):  # Debian's torch 1.13
            self.assertIn("compile_baseline_unavailable", response["flags"])
        # Its timed calls' outputs reached the host and were spot-checked.
        self.assertNotIn("timed_calls_unchecked", response["flags"])

    def test_check_extracts_cpp_source(self):
        extracted = self.responses["fallback-check"]["extracted"]
        self.assertIn('extern "C" void relu_forward', extracted["cpp_source"])

    def test_mindspore_task_falls_back_to_its_torch_reference(self):
        if importlib.util.find_spec("mindspore") is not None:
            self.skipTest("MindSpore is installed: the MindSpore reference runs")
        for case_id in ("mindspore-pass", "mindspore-reference"):
            self.assertIn("reference_fallback_torch", self.responses[case_id]["flags"])

    def test_mindspore_task_without_fallback_names_what_is_missing(self):
        if importlib.util.find_spec("mindspore") is not None:
            self.skipTest("MindSpore is installed")
        response = self.server.ask(request("ms-only", "run", "relu_mindspore_only", "relu_cpp",
                                           task_format="kernelbench-mindspore"))["ms-only"]
        self.assertEqual(response["status"], "error", response)
        self.assertEqual(response["error_class"], "task_error")
        self.assertIn("needs MindSpore", response["message"])
        self.assertIn("TorchModel", response["message"])

    def test_crash_log_tail_shows_the_line(self):
        # faulthandler writes the Python stack of the crashing call to the log.
        self.assertIn("kforge_candidate.py", self.responses["segfault"]["log_tail"])


class SpawnServerTest(VerdictsMixin, unittest.TestCase):
    mode = "spawn"
    cases = SPAWN_CASES


class ServerBehaviourTest(client.SharedServerTest):
    def test_responses_come_in_completion_order(self):
        slow = request("slow", "run", "relu", "infinite_loop", limits={"timeout_s": 2})
        fast = request("fast", "check", "relu", "relu_cpp")
        self.server.send(slow, fast)
        first, second = self.server.receive(2, timeout=60)
        self.assertEqual((first["id"], second["id"]), ("fast", "slow"))

    def test_bad_requests_get_harness_errors(self):
        self.server.process.stdin.write(b"{not json\n")
        self.server.send({"id": "x", "action": "dance"})
        first, second = self.server.receive(2, timeout=30)
        self.assertEqual(first["error_class"], "harness_error")
        self.assertIsNone(first["id"])
        self.assertEqual(second["id"], "x")
        self.assertIn("action", second["message"])

    def test_hostile_text_and_deep_code_stay_the_candidate_s(self):
        # A lone surrogate in the source the checker returns, in an exception's text, and
        # code nested beyond Python's parser: each answer is strict JSON (client.receive
        # checks) and the candidate's verdict, never a harness_error.
        surrogate_source = client.candidate_code("relu_cpp").replace(
            "cpp_source = r'''", "cpp_source = '// \\ud800\\n' r'''")
        raising = ("import torch\n\nclass ModelNew(torch.nn.Module):\n"
                   "    def forward(self, x):\n        raise ValueError('bad \\udfff')\n")
        deep = "import torch\nclass ModelNew(torch.nn.Module):\n    pass\ny = x" + "+x" * 100_000

        def req(request_id, action, code, language):
            req = request(request_id, action, "relu", "relu_cpp", language=language)
            req["candidate"]["code"] = code
            return req

        got = self.server.ask(req("source", "check", surrogate_source, "cpp"),
                              req("raises", "run", raising, "python"),
                              req("deep", "check", deep, "python"), timeout=180)
        self.assertTrue(got["source"]["extracted"]["cpp_source"].startswith("// \ufffd"), got["source"])
        self.assertEqual(got["raises"]["error_class"], "runtime_error", got["raises"])
        self.assertIn("bad \ufffd", got["raises"]["message"])
        self.assertEqual(got["deep"]["error_class"], "syntax_error", got["deep"])
        self.assertIn("nested too deeply", got["deep"]["message"])

    def test_candidate_artifact_is_what_runs(self):
        # An artifact whose kept source is relu_cpp's cpp_source but whose code writes
        # zeros: a numerical mismatch proves the child loaded it instead of compiling.
        def source_of(name):
            return checker.check(client.candidate_code(name), "cpp")["extracted"]["cpp_source"]

        relu_source, zeros_source = source_of("relu_cpp"), source_of("zeros_output")
        artifacts = tempfile.mkdtemp(prefix="kforge-test-artifact-")
        self.addCleanup(shutil.rmtree, artifacts, ignore_errors=True)
        artifact = os.path.join(artifacts, "key.so")
        kforge_cpp.compile_source(zeros_source, artifact)
        with open(os.path.join(artifacts, "key.cpp"), "w", encoding="utf-8") as kept:
            kept.write(relu_source)
        req = request("artifact", "run", "relu", "relu_cpp")
        req["candidate"]["artifact"] = artifact
        response = self.server.ask(req)["artifact"]
        self.assertEqual(response["error_class"], "numerical_mismatch", response)

    def test_broken_task_is_a_task_error_not_a_verdict(self):
        bad_sizes = request("bad-sizes", "run", "relu", "relu_cpp", sizes={"no_such": 3})
        response = self.server.ask(bad_sizes)["bad-sizes"]
        self.assertEqual(response["status"], "error")
        self.assertEqual(response["error_class"], "task_error")
        self.assertIn("no_such", response["message"])


class SetupFailureTest(unittest.TestCase):
    """A child whose harness set-up (no candidate code yet) ran out of device memory is
    flagged out_of_memory, which kforge's pool answers by running it again with the device
    to itself (admission_test covers that side); any other set-up failure is not."""

    def test_only_a_want_of_device_memory_is_flagged(self):
        from kforge_harness.server import server
        self.assertTrue(server._out_of_device_memory(
            "setting up the child failed: OutOfMemoryError: CUDA out of memory. Tried to "
            "allocate 256.00 MiB. GPU 0 has a total capacity of 139.80 GiB"))
        self.assertTrue(server._out_of_device_memory("RuntimeError: NPU out of memory"))
        self.assertFalse(server._out_of_device_memory(
            "setting up the child failed: OSError: [Errno 9] Bad file descriptor"))
        self.assertFalse(server._out_of_device_memory(None))


class ServerLifetimeTest(unittest.TestCase):
    def setUp(self):
        self.server = client.Server(mode="fork", max_children=2)

    def tearDown(self):
        self.server.close()

    def test_eof_finishes_in_flight_work_then_exits(self):
        self.server.send(request("last", "check", "relu", "relu_cpp"))
        self.server.process.stdin.close()
        self.assertEqual(self.server.receive(1, timeout=30)[0]["id"], "last")
        self.assertEqual(self.server.process.wait(timeout=30), 0)

    def test_children_die_with_a_killed_server(self):
        self.server.send(request("orphan", "run", "relu", "infinite_loop",
                                 limits={"timeout_s": 60}))
        deadline = time.monotonic() + 20
        children = []
        while not children and time.monotonic() < deadline:
            children = _children_of(self.server.process.pid)
            time.sleep(0.05)
        self.assertTrue(children, "no child was started")
        self.server.process.send_signal(signal.SIGKILL)
        self.server.process.wait()
        deadline = time.monotonic() + 10
        while any(_alive(pid) for pid in children) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertFalse([pid for pid in children if _alive(pid)])


class NotReadyTest(unittest.TestCase):
    def _first_line(self, *args):
        env = dict(os.environ, PYTHONPATH=client.HARNESS_DIR)
        done = subprocess.run([sys.executable, "-m", "kforge_harness", "serve", *args],
                              stdin=subprocess.DEVNULL, capture_output=True, env=env,
                              timeout=60, check=False)
        return done.returncode, json.loads(done.stdout.splitlines()[0])

    def test_npu_without_torch_npu_names_what_is_missing(self):
        code, line = self._first_line("--device", "npu:0")
        self.assertEqual(code, 1)
        self.assertFalse(line["ready"])
        self.assertIn("torch_npu is not importable", line["error"])

    def test_interpreter_without_torch_is_not_ready(self):
        other = shutil.which("python3")
        if other is None or subprocess.run([other, "-c", "import torch"], check=False,
                                           capture_output=True).returncode == 0:
            self.skipTest("no interpreter without torch on PATH")
        env = dict(os.environ, PYTHONPATH=client.HARNESS_DIR)
        done = subprocess.run([other, "-m", "kforge_harness", "serve"], capture_output=True,
                              stdin=subprocess.DEVNULL, env=env, timeout=60, check=False)
        line = json.loads(done.stdout.splitlines()[0])
        self.assertEqual(done.returncode, 1)
        self.assertFalse(line["ready"])
        self.assertIn("torch is not importable", line["error"])

    def test_unknown_device(self):
        code, line = self._first_line("--device", "tpu:0")
        self.assertEqual(code, 1)
        self.assertIn("unknown device", line["error"])


def _children_of(pid):
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="ascii") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry))
    return found


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class TraceTest(unittest.TestCase):
    """KFORGE_HARNESS_TRACE=FILE: a timeline of the server's work (server/trace.py), which
    bench/trace_summary.py reads."""

    def test_a_timed_job_leaves_its_timeline(self):
        with tempfile.TemporaryDirectory() as scratch:
            path = os.path.join(scratch, "trace.jsonl")
            server = client.Server(max_children=1, extra_env={"KFORGE_HARNESS_TRACE": path})
            try:
                response = server.ask(client.request("traced", "run", "relu", None,
                                                     options={"timing": {"enabled": True, "trials": 5}}),
                                      timeout=300)["traced"]
            finally:
                server.close()
            self.assertEqual(response["status"], "pass", response)
            with open(path, encoding="utf-8") as handle:
                events = [json.loads(line) for line in handle]
            # The server's alone to read: it holds every job's times (red team 16).
            self.assertEqual(os.stat(path).st_mode & 0o777, 0o600)
        # Each event names its server: request ids are per client, several servers
        # (one per device) may append to one file.
        self.assertEqual({e["server"] for e in events}, {server.process.pid})
        mine = [e["what"] for e in events if e["job"] == "traced"]
        for what in ("start", "host_start", "host_ready", "child_start", "host_sent", "host_answered",
                     "loop_asked", "loop_started", "loop_done", "finish"):
            self.assertIn(what, mine)
        self.assertLess(mine.index("start"), mine.index("loop_started"))
        self.assertLess(mine.index("loop_done"), mine.index("finish"))
        ts = [e["t"] for e in events]
        self.assertEqual(ts, sorted(ts))  # one clock, written in order


if __name__ == "__main__":
    unittest.main()
