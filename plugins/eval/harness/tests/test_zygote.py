"""The zygote is clean (sandbox/zygote.py): a candidate child, forked from a process that
never saw a request, holds in its memory none of the run's secrets and nothing of other
candidates. The test reads the candidate's whole readable memory from outside while its
forward waits, and looks for: the run's secret seed, the seeds derived from it for
another task, another candidate's code (sent to the same server before and beside it), and,
as the control that the scan finds what is there, the candidate's own code."""

import os
import re
import time
import unittest

from kforge_harness.server.seeds import RequestSeeds
from tests import client

SECRET = 0x5A17C0FFEE15BAD1


def _workers(root_pid):
    """Host pids of every process below `root_pid`."""
    found, frontier = [], [root_pid]
    while frontier:
        parent = frontier.pop()
        for task in os.listdir(f"/proc/{parent}/task"):
            try:
                with open(f"/proc/{parent}/task/{task}/children", encoding="ascii") as handle:
                    children = [int(x) for x in handle.read().split()]
            except OSError:
                continue
            found += children
            frontier += children
    return found


def _sleeping_worker(root_pid, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for pid in _workers(root_pid):
            try:
                if os.path.exists(os.path.join(os.readlink(f"/proc/{pid}/cwd"), "sleeping")):
                    return pid
            except OSError:
                continue
        time.sleep(0.1)
    raise AssertionError("the sleeping candidate never started")


def _memory(pid):
    """Every readable, non-file-backed region of the process (heap, stacks, anonymous
    maps: where a copied request or seed would live), concatenated."""
    chunks = []
    with open(f"/proc/{pid}/maps", encoding="ascii") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
        for line in maps:
            fields = line.split()
            start, end = (int(x, 16) for x in fields[0].split("-"))
            path = fields[5] if len(fields) > 5 else ""
            if "r" not in fields[1] or (path and not path.startswith("[")) or path == "[vvar]":
                continue
            try:
                mem.seek(start)
                chunks.append(mem.read(end - start))
            except (OSError, ValueError, OverflowError):
                continue
    return b"".join(chunks)


class ZygoteTest(unittest.TestCase):
    def test_a_candidate_childs_memory_holds_no_secret_and_no_other_candidate(self):
        server = client.Server(max_children=2)
        try:
            options = {"seed": SECRET, "trials": 1}
            # Another candidate's request first, and one beside the sleeper: the server
            # holds both when it hands the sleeper its job.
            first = client.request("other-1", "run", "softmax", "zygote/other", language="python",
                                   options=options)
            server.send(first)
            server.receive(1)
            sleeper = client.request("sleeper", "run", "relu", "zygote/sleeper", language="python",
                                     options=options)
            beside = client.request("other-2", "run", "softmax", "zygote/other", language="python",
                                    options=options)
            server.send(beside, sleeper)
            pid = _sleeping_worker(server.process.pid)
            memory = _memory(pid)
            workdir = os.readlink(f"/proc/{pid}/cwd")
            with open(os.path.join(workdir, "release"), "w", encoding="ascii") as handle:
                handle.write("1")
            responses = {r["id"]: r for r in server.receive(2)}
        finally:
            server.close()
        self.assertEqual(responses["sleeper"]["status"], "pass", responses["sleeper"])
        self.assertIn(b"kforge-own-marker-5b1e", memory, "the scan reads the candidate's memory")
        self.assertNotIn(b"kforge-other-marker-9c4d", memory)
        other = RequestSeeds(SECRET, "softmax")
        for name, value in [("the run's secret seed", SECRET), ("the other task's model seed", other.model),
                            ("the other task's trial seed", other.inputs(1)[0])]:
            with self.subTest(name):
                self.assertNotIn(str(value).encode(), memory)
                self.assertIsNone(re.search(re.escape(value.to_bytes(8, "little")), memory))


if __name__ == "__main__":
    unittest.main()
