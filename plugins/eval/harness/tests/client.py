"""A minimal client of the harness protocol for the tests (and the benchmark's model):
starts a server, sends requests, collects responses by id."""

import json
import os
import select
import subprocess
import sys
import time
import unittest

HARNESS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


def strict_json(line):
    """A response line as the C++ client reads it: Python's json also takes the escape
    of a lone surrogate, which strict readers refuse, so the text is checked too."""
    response = json.loads(line)

    def check(value):
        if isinstance(value, str):
            value.encode("utf-8")  # raises UnicodeEncodeError on a lone surrogate
        elif isinstance(value, dict):
            for key, item in value.items():
                check(key)
                check(item)
        elif isinstance(value, list):
            for item in value:
                check(item)
    check(response)
    return response


def machine_freezer():
    """How a server started by these tests freezes candidates between timed calls ("cgroup
    v2", or "signals (why)"): the same decision, made by the same user in the same cgroup."""
    from kforge_harness.server.freezer import Freezer
    freezer = Freezer.open()
    freezer.close()
    return freezer.describe()


def task_path(name):
    return os.path.join(DATA, "tasks", name + ".py")


def candidate_code(name):
    with open(os.path.join(DATA, "candidates", name + ".py"), encoding="utf-8") as handle:
        return handle.read()


def request(request_id, action, task, candidate=None, language="cpp", task_format=None,
            options=None, limits=None, **task_fields):
    """A request for task file `task` and candidate file `candidate` (None: the reference
    runs as its own candidate). Timing is off unless options turn it on."""
    task_spec = {"path": task_path(task), **task_fields}
    if task_format:
        task_spec["format"] = task_format
    opts = {"trials": 2, "timing": {"enabled": False}}
    opts.update(options or {})
    return {"id": request_id, "action": action, "task": task_spec,
            "candidate": {"code": candidate_code(candidate) if candidate else None,
                          "language": language},
            "options": opts, "limits": {"timeout_s": 30, **(limits or {})}}


class Server:
    def __init__(self, mode="fork", device=None, max_children=2, extra_env=None, store_mb=None,
                 python=sys.executable, harness_dir=HARNESS_DIR, launcher=(), cwd=None):
        """`device`: the server's device, by default $KFORGE_TEST_DEVICE or the CPU (the
        CPU suites' attacks run on a GPU host as they are: KFORGE_TEST_DEVICE=cuda:0);
        `launcher`: a command the server runs under (an ancestor between this process
        and the server, as kforge is); `cwd`: the server's working directory."""
        device = device or os.environ.get("KFORGE_TEST_DEVICE", "cpu")
        env = dict(os.environ)
        env["PYTHONPATH"] = harness_dir
        env.update(extra_env or {})
        store = ["--reference-store-mb", str(store_mb)] if store_mb is not None else []
        self.process = subprocess.Popen(
            [*launcher, python, "-m", "kforge_harness", "serve", "--device", device,
             "--mode", mode, "--max-children", str(max_children), *store],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=cwd)
        self.pending = b""
        self.needs = {}  # request id -> the need line's need_mb
        self.unclaimed = []  # responses that arrived while ask() waited for others
        # Read with os.read only: a buffered readline could swallow later responses.
        self.ready = self.receive(1, timeout=60)[0]

    def send(self, *requests):
        for req in requests:
            self.process.stdin.write((json.dumps(req) + "\n").encode())
        self.process.stdin.flush()

    def receive(self, count, timeout=120):
        """The next `count` responses, in arrival order (those ask() set aside first)."""
        responses, self.unclaimed = self.unclaimed, []
        deadline = time.monotonic() + timeout
        fd = self.process.stdout.fileno()
        while len(responses) < count:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError(f"got {len(responses)} of {count} responses")
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise EOFError(f"server closed stdout after {len(responses)} responses")
            self.pending += chunk
            *lines, self.pending = self.pending.split(b"\n")
            for line in lines:
                if not line.strip():
                    continue
                answer = strict_json(line)
                if "status" not in answer and "need_mb" in answer:  # a need line (PROTOCOL.md)
                    self.needs[answer["id"]] = answer["need_mb"]
                else:
                    responses.append(answer)
        return responses

    def ask(self, *requests, timeout=120):
        """Sends requests, returns {id: response} once each of them is answered. Answers
        to requests sent earlier (a neighbour that finishes first) are set aside for the
        next receive()."""
        self.send(*requests)
        wanted = {r["id"] for r in requests}
        answered, others = {}, []
        deadline = time.monotonic() + timeout
        while wanted - answered.keys():
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"got {len(answered)} of {len(wanted)} responses")
            for response in self.receive(1, left):
                if response.get("id") in wanted:
                    answered[response["id"]] = response
                else:
                    others.append(response)
        self.unclaimed = others + self.unclaimed
        return answered

    def close(self):
        try:
            self.process.stdin.close()
        except BrokenPipeError:
            pass
        if self.process.poll() is None:
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process.stdout.close()


class SharedServerTest(unittest.TestCase):
    """Test cases sharing one fork-mode server with MAX_CHILDREN children, started once
    (one: a timing attack and its controls run alone)."""

    MAX_CHILDREN = 2

    @classmethod
    def setUpClass(cls):
        cls.server = Server(mode="fork", max_children=cls.MAX_CHILDREN)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()
