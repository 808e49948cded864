"""Hostile candidates through the real harness server (issue 9): one candidate per attack
mechanism (tests/data/candidates/hostile_l3/), each of which must fail, be blamed on the
candidate, leave what it attacked as it was, and leave the server answering the next
request right.

The server runs the way kforge runs it: under an ancestor process (a shell standing for
kforge) whose environment holds API keys and whose working directory is a run directory
with kforge.db and results.jsonl open; a compile cache with a library another candidate
uses; a listener on 127.0.0.1 in the host's network namespace. test_sandbox.py proves the
same mechanisms on the sandbox module alone; this file proves them where the hidden
attacks come from: a candidate's code in a `run` request."""

import hashlib
import os
import shutil
import socket
import tempfile
import threading
import time
import unittest
import unittest.mock

import torch

import kforge_cpp
from kforge_harness.l1 import checker
from kforge_harness.judge import judge, outputs
from kforge_harness import protocol
from kforge_harness.protocol import reporter
from kforge_harness.server import server
from tests import client
from tests.client import request

SECRET = "sk-kforge-attack-0123456789abcdef"
NOT_THE_CANDIDATES = ("harness_error", "task_error", "host_error")
LISTEN_PORTS = range(47610, 47620)  # hostile_l3/rejoin_netns.py tries these




def _digest(path):
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


class _Listener:
    """A TCP listener on the first free port of LISTEN_PORTS: what a candidate that got
    out of its network namespace would reach. Records every connection."""

    def __init__(self):
        self.connections = []
        self.sock = None
        for port in LISTEN_PORTS:
            sock = socket.socket()
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                sock.close()
                continue
            sock.listen(8)
            sock.settimeout(0.2)
            self.sock, self.port = sock, port
            break
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self):
        while self.sock is not None and not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections.append(conn.recv(64))
            conn.close()

    def close(self):
        self.stop.set()
        self.thread.join()
        if self.sock is not None:
            self.sock.close()


class AttackFixture(unittest.TestCase):
    """The attacked host (see the module's docstring) and what every attack must come to."""

    DEVICE = "cpu"
    MODE = "fork"
    # How a hostile file becomes a candidate of another kind (test_attacks_gpu.py): code
    # appended to it, and the request's language; None: as it is.
    WRAP = None
    # A CUDA toolkit the server does not find: the header a lying exception names is then
    # really missing, as on a CPU-only CI machine.
    HIDE_CUDA_TOOLKIT = True
    TIMEOUT_S = 30

    def hostile(self, request_id, name, language="python", **fields):
        limits = {"timeout_s": self.TIMEOUT_S, **fields.pop("limits", {})}
        req = request(request_id, "run", "relu", "hostile_l3/" + name, language=language,
                      limits=limits, **fields)
        if self.WRAP is not None:
            code, req["candidate"]["language"] = self.WRAP
            req["candidate"]["code"] += code
        return req

    @classmethod
    def setUpClass(cls):
        cls.base = tempfile.mkdtemp(prefix="kforge-attack-")
        os.chmod(cls.base, 0o755)
        # kforge's run directory: the store and the results, open in the process that
        # stands for kforge (this one) and the server's working directory.
        cls.run_dir = os.path.join(cls.base, "run")
        os.makedirs(cls.run_dir)
        # write_store forges only where this marker is: the control runs it unsandboxed.
        open(os.path.join(cls.run_dir, "kforge-attack-target"), "wb").close()
        cls.store_files = {}
        cls.planted = {}
        cls.open_store = []
        for name, text in (("kforge.db", b"SQLite format 3\0verdicts"),
                           ("results.jsonl", b'{"candidate": "honest", "status": "fail"}\n')):
            path = os.path.join(cls.run_dir, name)
            cls.planted[path] = text
            with open(path, "wb") as handle:
                handle.write(text)
            cls.store_files[path] = _digest(path)
            cls.open_store.append(open(path, "ab"))  # noqa: SIM115 - held open like kforge's
        # The C++ stage's cache: relu_cpp's library under its key, its source beside it.
        cls.cache_dir = os.path.join(cls.base, "cache")
        os.makedirs(cls.cache_dir)
        open(os.path.join(cls.cache_dir, "kforge-attack-target"), "wb").close()
        relu_source = checker.check(client.candidate_code("relu_cpp"), "cpp")["extracted"]["cpp_source"]
        cls.artifact = os.path.join(cls.cache_dir, "relukey.so")
        kforge_cpp.compile_source(relu_source, cls.artifact)
        with open(os.path.join(cls.cache_dir, "relukey.cpp"), "w", encoding="utf-8") as kept:
            kept.write(relu_source)
        cls.cache_files = {p: _digest(p) for p in (cls.artifact, cls.artifact[:-3] + ".cpp")}
        cls.listener = _Listener()
        # "$@"; exit: the shell stays the server's parent (no exec of the last command).
        launcher = ["/bin/sh", "-c", '"$@"; exit $?', "kforge"]
        cls.server = client.Server(
            mode=cls.MODE, device=cls.DEVICE, max_children=2, launcher=launcher, cwd=cls.run_dir,
            extra_env={"OPENAI_API_KEY": SECRET, "KFORGE_TEST_API_KEY": SECRET,
                       "XDG_CACHE_HOME": cls.base, "KFORGE_CPP_CACHE": cls.cache_dir,
                       **({"CUDA_HOME": os.path.join(cls.base, "no-cuda")}
                          if cls.HIDE_CUDA_TOOLKIT else {})})

    @classmethod
    def tearDownClass(cls):
        cls.server.close()
        cls.listener.close()
        for handle in cls.open_store:
            handle.close()
        shutil.rmtree(cls.base, ignore_errors=True)

    # ---- what every attack must come to ----

    def attack(self, req, timeout=None):
        response = self.server.ask(req, timeout=timeout or self.TIMEOUT_S + 150)[req["id"]]
        self.assertEqual(response["id"], req["id"])
        self.assert_candidate_failed(response)
        self.assert_nothing_leaked(response)
        self.assert_untouched()
        self.assert_healthy(req["id"])
        return response

    def assert_candidate_failed(self, response, error_class=None):
        detail = {k: response.get(k) for k in ("status", "error_class", "message", "flags")}
        self.assertEqual(response["status"], "fail", detail)
        self.assertNotIn(response["error_class"], NOT_THE_CANDIDATES, detail)
        # No attack here needs its time: a timeout would mean it never got to attack.
        self.assertNotEqual(response["error_class"], "timeout", detail)
        if error_class is not None:
            self.assertEqual(response["error_class"], error_class, detail)

    def assert_nothing_leaked(self, response):
        self.assertNotIn(SECRET, repr(response))

    def assert_untouched(self):
        for path, digest in {**self.store_files, **self.cache_files}.items():
            self.assertEqual(_digest(path), digest, f"{path} was changed")
        self.assertEqual(self.listener.connections, [], "a candidate reached 127.0.0.1")

    def honest(self, request_id):
        """An honest C++ candidate whose library is the cache's."""
        req = request(request_id, "run", "relu", "relu_cpp", limits={"timeout_s": self.TIMEOUT_S})
        req["candidate"]["artifact"] = self.artifact
        return req

    def honest_at_new_sizes(self, request_id):
        """An honest candidate of a task at sizes no request used yet: its reference is
        computed now."""
        return request(request_id, "run", "linear", "linear_cpp", sizes={"in_features": 40},
                       limits={"timeout_s": self.TIMEOUT_S})

    def unsandboxed(self, request_id, name):
        req = self.hostile(request_id, name, limits={"network": True})
        response = self.server.ask(req, timeout=self.TIMEOUT_S + 150)[req["id"]]
        self.assertIn("sandbox_not_entered", response["flags"], response)
        return response

    def assert_healthy(self, after):
        """The next request, an honest candidate, is answered right."""
        req = self.honest(f"{after}-next")
        response = self.server.ask(req, timeout=self.TIMEOUT_S + 150)[req["id"]]
        self.assertEqual(response["status"], "pass", response)
        self.assertEqual(self.server.pending.strip(), b"", "stray bytes on the server's stdout")



class AttackTest(AttackFixture):
    """One hostile candidate per mechanism, on the CPU."""

    # ---- patching the judge: it is not in the candidate's process ----

    def test_patching_the_comparator(self):
        self.attack(self.hostile("patch-compare", "patch_comparator"))

    def test_patching_the_reporter(self):
        self.attack(self.hostile("patch-reporter", "patch_reporter"))

    def test_patching_the_rule(self):
        response = self.attack(self.hostile("patch-rule", "patch_rule"))
        self.assertEqual(response["error_class"], "numerical_mismatch", response)

    def test_patching_the_reference(self):
        self.attack(self.hostile("patch-reference", "patch_reference"))
        # A task whose reference is computed after the attack (other sizes): still right.
        honest = self.honest_at_new_sizes("after-patch-reference")
        self.assertEqual(self.server.ask(honest)[honest["id"]]["status"], "pass")

    def test_patching_the_judge_from_cpp_holding_the_gil(self):
        response = self.attack(self.hostile("cpp-patch", "cpp_patch_judge", language="cpp"))
        self.assertEqual(response["error_class"], "numerical_mismatch", response)

    # The candidate's child times itself (candidate.py, timing.py), so a patched clock
    # reports what the candidate likes; the server brackets every timed call with its own
    # clock (timing_plan.py), and 20 ms of work reported as a nanosecond is rejected.
    def test_patching_the_timer(self):
        req = self.hostile("patch-timer", "patch_timer",
                      options={"timing": {"enabled": True, "warmup": 1, "trials": 5}})
        response = self.server.ask(req, timeout=self.TIMEOUT_S + 150)[req["id"]]
        detail = {k: response.get(k) for k in ("status", "error_class", "message", "metrics")}
        # Its answers are right; the time it reports is not believed.
        self.assertNotEqual(response["status"], "pass", detail)
        self.assert_candidate_failed(response)
        self.assert_healthy(req["id"])

    def test_an_impossible_time(self):
        req = self.hostile("negative-time", "impossible_timing",
                           options={"timing": {"enabled": True, "warmup": 1, "trials": 3}})
        response = self.attack(req)
        self.assertIn("malformed timings", response["message"])
        self.assertNotIn("AttributeError", response["message"])  # the patch itself took

    # ---- forging the verdict ----

    def test_forging_result_lines_on_the_childs_pipe(self):
        self.attack(self.hostile("forge-lines", "forge_result_line"))

    def test_answering_the_servers_stdout_through_proc(self):
        # Its forged answer carries this id: the first response with it must be the server's.
        self.attack(self.hostile("attack-stdout", "answer_server_stdout"))

    def test_an_output_handed_over_as_a_fifo(self):
        started = time.monotonic()
        self.attack(self.hostile("fifo", "fifo_output"))
        self.assertLess(time.monotonic() - started, self.TIMEOUT_S + 60)

    def test_a_line_nested_too_deep_to_decode(self):
        self.attack(self.hostile("deep-json", "deep_json_line"))

    def test_a_failure_report_of_the_wrong_shape(self):
        self.attack(self.hostile("malformed-failure", "malformed_failure_report"))

    # ---- shifting the blame ----

    def test_shifting_blame_through_phase_lines(self):
        response = self.attack(self.hostile("phase-lines", "blame_phase_lines"))
        self.assertNotIn("sandbox_not_entered", response["flags"])

    def test_an_exception_whose_text_blames_the_machine(self):
        if any(os.path.isfile(os.path.join(d, "cuda_runtime.h"))
               for d in ("/usr/include", "/usr/local/include")):
            self.skipTest("cuda_runtime.h is in the system's include directories: the lie "
                          "about a missing header cannot be told on this machine")
        self.attack(self.hostile("lying-str", "exception_lying_str"))

    def test_an_exception_whose_dunders_raise_and_whose_del_exits(self):
        self.attack(self.hostile("raising-dunders", "exception_raising_dunders"))

    def test_an_exception_whose_str_ends_the_process(self):
        self.attack(self.hostile("exits-in-str", "exception_exits_in_str"))

    # ---- the store, the cache, the secrets, the host ----

    def test_the_store_and_the_results_cannot_be_reached(self):
        # Neither written (attack() compares their digests) nor even read.
        response = self.attack(self.hostile("write-store", "write_store"))
        self.assertIn("store reached []", response["log_tail"])

    def test_a_log_file_replaced_by_links_to_secrets(self):
        response = self.attack(self.hostile("log-symlink", "log_symlink"))
        self.assertNotIn("SQLite", response["log_tail"])

    def test_poisoning_the_compile_cache(self):
        self.attack(self.hostile("poison-cache", "poison_compile_cache", language="cpp"))

    def test_reading_api_keys_from_the_environment_and_proc(self):
        response = self.attack(self.hostile("steal-keys", "steal_keys"))
        self.assertIn("LEAKED []", response["message"])

    def test_rejoining_the_network_namespace(self):
        if self.listener.sock is None:
            self.skipTest(f"no free port in {LISTEN_PORTS} to listen on")
        response = self.attack(self.hostile("rejoin-netns", "rejoin_netns"))
        self.assertIn("reached []", response["log_tail"])

    def test_a_setsid_survivor(self):
        self.attack(self.hostile("survivor", "setsid_survivor"))
        deadline = time.monotonic() + 10
        while _processes_named("kfsurvivor") and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertEqual(_processes_named("kfsurvivor"), [])

    # ---- the controls: without the sandbox the same candidates get through ----

    def test_control_without_the_sandbox_the_store_is_reached(self):
        try:
            response = self.unsandboxed("control-store", "write_store")
            self.assertNotIn("store reached []", response["log_tail"])
            changed = [p for p, digest in self.store_files.items() if _digest(p) != digest]
            self.assertEqual(sorted(changed), sorted(self.store_files))
        finally:
            for path, text in self.planted.items():
                with open(path, "wb") as handle:
                    handle.write(text)

    def test_control_without_the_sandbox_the_keys_leak(self):
        response = self.unsandboxed("control-keys", "steal_keys")
        self.assertIn(SECRET, response["message"])

    def test_control_without_the_sandbox_the_network_is_reached(self):
        if self.listener.sock is None:
            self.skipTest(f"no free port in {LISTEN_PORTS} to listen on")
        try:
            response = self.unsandboxed("control-netns", "rejoin_netns")
            self.assertIn(f"reached [{self.listener.port}]", response["log_tail"])
        finally:
            time.sleep(0.5)  # the listener's thread records the connection
            self.listener.connections.clear()

    def test_a_300_mb_flood_of_short_lines(self):
        response = self.attack(self.hostile("line-flood", "line_flood"))
        self.assertIn("to the harness's pipe", response["message"])

    def test_a_300_mb_output_flood(self):
        before = shutil.disk_usage(self.base).used
        response = self.attack(self.hostile("flood", "output_flood"), timeout=300)
        self.assertLessEqual(len(response["log_tail"]), 8000)
        # Whatever it wrote went with its directory.
        self.assertLess(shutil.disk_usage(self.base).used - before, 64 << 20)


class SpawnAttackTest(AttackFixture):
    """The attacks where a spawned child differs from a forked one (it is exec'd with the
    server's whole environment and arguments before it enters its sandbox), in spawn
    mode."""

    MODE = "spawn"
    TIMEOUT_S = 120  # a fresh interpreter imports torch first
    attacks = AttackTest
    test_patching_the_comparator = attacks.test_patching_the_comparator
    test_forging_result_lines_on_the_childs_pipe = attacks.test_forging_result_lines_on_the_childs_pipe
    test_answering_the_servers_stdout_through_proc = \
        attacks.test_answering_the_servers_stdout_through_proc
    test_reading_api_keys_from_the_environment_and_proc = \
        attacks.test_reading_api_keys_from_the_environment_and_proc
    test_a_log_file_replaced_by_links_to_secrets = attacks.test_a_log_file_replaced_by_links_to_secrets
    test_the_store_and_the_results_cannot_be_reached = \
        attacks.test_the_store_and_the_results_cannot_be_reached
    test_a_setsid_survivor = attacks.test_a_setsid_survivor


class TrustedSideTest(unittest.TestCase):
    """What a candidate's child sends is data the trusted side validates; nothing it sends
    can raise there, and nothing in it is a verdict, a phase or a blame."""

    HOSTILE_VALUES = [None, True, 7, -1.5, "x", [], {}, [[[]]], {"a": {"b": {}}},
                      ["float32"], [{"kind": "tensor"}], {"__class__": "Exception"}]

    def test_a_childs_line_is_an_object_of_bounded_depth_or_nothing(self):
        self.assertEqual(reporter.decode(b'{"trial": 0, "outputs": [{"shape": [2, 3]}]}'),
                         {"trial": 0, "outputs": [{"shape": [2, 3]}]})
        deep = b'{"failed": ' + b"[" * 200000 + b"]" * 200000 + b"}"
        nested = b'{"a": ' + b"[" * (reporter.MAX_DEPTH + 1) + b"]" * (reporter.MAX_DEPTH + 1) + b"}"
        for line in (deep, nested, b"[1, 2]", b'"result"', b"\xff\xfe{", b"{", b"", b"1" * 5000):
            with self.subTest(line=line[:40]):
                self.assertIsNone(reporter.decode(line))

    def test_the_judge_takes_any_trial_report_as_data(self):
        directory = tempfile.mkdtemp(prefix="kforge-judge-test-")
        self.addCleanup(shutil.rmtree, directory, ignore_errors=True)
        reference = outputs.write_leaves([torch.linspace(-1, 1, 64)], directory, "ref")
        for field in ("outputs", "changed_inputs", "aliased"):
            for value in self.HOSTILE_VALUES:
                # The candidate's directory holds no output: any description is a lie.
                report = {"trial": 0, "outputs": reference, "changed_inputs": [],
                          "aliased": None, field: value}
                command = {"label": "trial 1", "rule": protocol.DEFAULT_RULE,
                           "reference": {"leaves": reference, "mutates_inputs": False,
                                         "aliases_inputs": False, "dir": directory,
                                         "prefix": "ref"},
                           "candidate": {"dir": directory, "prefix": "out-0",
                                         "report": report}}
                with self.subTest(field=field, value=value):
                    result = judge.judge_trial(command)
                    self.assertEqual(result["status"], "fail", result)
                    self.assertNotIn(result["error_class"], NOT_THE_CANDIDATES, result)

    def test_a_failure_report_of_any_shape_is_the_candidates(self):
        for field in ("stage", "trial", "types", "text", "where"):
            for value in self.HOSTILE_VALUES + [["HarnessError", "TaskError"], "task",
                                                "harness_error", ["CompileError"]]:
                report = {"stage": "forward", "trial": 0, "types": ["RuntimeError"],
                          "text": "boom", "where": "", field: value}
                for language in protocol.LANGUAGES:
                    with self.subTest(field=field, value=value, language=language):
                        result = server.Server._candidate_failure(report, language)
                        self.assertEqual(result["status"], "fail", result)
                        self.assertNotIn(result["error_class"], NOT_THE_CANDIDATES, result)

    def test_a_missing_header_is_the_hosts_only_for_a_language_that_builds_with_it(self):
        report = {"stage": "import", "types": ["CompileError"], "where": "",
                  "text": "fatal error: cuda_runtime.h: No such file or directory"}
        with unittest.mock.patch.object(server.toolchain, "header_available", return_value=False):
            self.assertEqual(server.Server._candidate_failure(report, "cuda")["error_class"],
                             "host_error")
            for language in ("python", "cpp", "triton"):
                self.assertEqual(server.Server._candidate_failure(report, language)["error_class"],
                                 "compile_error", language)


def _processes_named(name):
    found = []
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as comm:
                if comm.read().strip() == name:
                    found.append(int(pid))
        except OSError:
            pass
    return found


if __name__ == "__main__":
    unittest.main()
