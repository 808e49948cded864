"""The harness's scratch space: the directories of servers killed before they could clean
up are removed by the next server; a filesystem too small for a task's outputs is the
host's fault (host_error, flag scratch_full), never the candidate's or the harness's."""

import fcntl
import os
import shutil
import subprocess
import tempfile
import time
import unittest

from kforge_harness.server import server
from tests import client
from tests.client import request


def server_dir(parent, name, age_s, locked=False):
    path = os.path.join(parent, name)
    os.makedirs(os.path.join(path, "store"))
    with open(os.path.join(path, "store", "outputs.bin"), "wb") as handle:
        handle.write(b"\0" * 4096)
    fd = os.open(os.path.join(path, "server.lock"), os.O_CREAT | os.O_RDONLY, 0o600)
    if locked:
        fcntl.flock(fd, fcntl.LOCK_EX)
    else:
        os.close(fd)
        fd = None
    then = time.time() - age_s
    os.utime(path, (then, then))
    return path, fd


class AbandonedDirectoryTest(unittest.TestCase):
    def test_a_dead_servers_directory_goes_a_live_or_new_ones_stays(self):
        parent = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, parent, True)
        dead, _ = server_dir(parent, "kforge-harness-dead", 3600)
        live, fd = server_dir(parent, "kforge-harness-live", 3600, locked=True)
        self.addCleanup(os.close, fd)
        young, _ = server_dir(parent, "kforge-harness-young", 0)
        other = os.path.join(parent, "kforge-harness-not-a-server")
        os.makedirs(other)
        server = client.Server(max_children=1, extra_env={"TMPDIR": parent})
        server.close()
        self.assertFalse(os.path.exists(dead))
        for kept in (live, young, other):
            self.assertTrue(os.path.exists(kept), kept)


class SmallScratchTest(unittest.TestCase):
    def setUp(self):
        self.mount = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.mount, True)
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", self.mount],
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            self.skipTest(f"cannot mount a 64 MiB tmpfs here (needs root): {done.stderr.strip()}")
        self.addCleanup(subprocess.run, ["umount", "-l", self.mount], check=False)
        self.server = client.Server(max_children=2, extra_env={"TMPDIR": self.mount})
        self.addCleanup(self.server.close)

    def test_outputs_larger_than_the_scratch_are_the_hosts_fault(self):
        # 1024 x 8192 floats: 32 MiB per output, 64 MiB for the reference's two trials.
        big = request("big", "run", "relu", sizes={"batch_size": 1024, "dim": 8192})
        response = self.server.ask(big, timeout=300)["big"]
        self.assertEqual(response["error_class"], "host_error", response)
        self.assertIn("scratch_full", response["flags"])
        self.assertIn("TMPDIR", response["message"])
        # 768 x 8192: the reference's 2 x 24 MiB fit; the candidate's two trials, computed
        # ahead of the judge, would need 48 MiB more: the server does not start it (its
        # child would find the filesystem full).
        middle = request("middle", "run", "relu", "python_relu", language="python",
                         sizes={"batch_size": 768, "dim": 8192})
        response = self.server.ask(middle, timeout=300)["middle"]
        self.assertEqual(response["error_class"], "host_error", response)
        self.assertIn("the candidate's outputs need 48 MiB", response["message"])
        # What fits still runs, on the same server.
        small = request("small", "run", "relu", sizes={"batch_size": 128, "dim": 4096})
        self.assertEqual(self.server.ask(small, timeout=300)["small"]["status"], "pass")


class _Proc:
    def __init__(self, workdir):
        self.workdir = workdir


class _Job:
    action = "run"

    def __init__(self, workdir, had_company=True):
        self.proc = _Proc(workdir)
        self.workdir_bytes = 0
        self.had_company = had_company


class _Server:
    """What Server._scratch_full uses: one trial of 1 MiB ahead of the judge, and the
    scratch's free bytes now."""

    root = "/scratch"

    def __init__(self, free=1 << 30):
        self.free = free

    @staticmethod
    def _trials_ahead(_job):
        return 1, 1 << 20

    def _scratch_free(self):
        return self.free


class FullScratchBlameTest(unittest.TestCase):
    """A candidate whose output write finds the shared scratch full is not blamed for it
    unless its own directory holds more than its outputs: other jobs may have filled the
    filesystem, and freed it again, before the server looks."""

    ENOSPC = {"text": "OSError: [Errno 28] No space left on device (outputs.py:167, in write_leaves)"}

    def host_s(self, result):
        self.assertEqual(result["error_class"], "host_error", result)
        self.assertIn("scratch_full", result["flags"])

    def setUp(self):
        self.workdir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.workdir, True)

    def write(self, name, mib):
        with open(os.path.join(self.workdir, name), "wb") as handle:
            handle.write(os.urandom(1 << 20) * mib)

    def test_a_full_filesystem_the_candidate_did_not_fill_is_the_host_s(self):
        self.write("out-0-0.bin", 1)  # its partial output: within what it may keep
        # Beside other jobs, which may have freed the room since: the host's (retried alone).
        self.host_s(server.Server._scratch_full(_Server(), _Job(self.workdir), self.ENOSPC))
        # Alone, with the filesystem still full: the host's.
        self.host_s(server.Server._scratch_full(_Server(free=0), _Job(self.workdir, False), self.ENOSPC))

    def test_alone_with_room_to_spare_the_claim_is_the_candidate_s(self):
        self.assertIsNone(server.Server._scratch_full(_Server(), _Job(self.workdir, False), self.ENOSPC))

    def test_a_candidate_that_filled_its_directory_is_not_excused(self):
        self.write("junk.bin", 8)
        self.assertIsNone(server.Server._scratch_full(_Server(), _Job(self.workdir), self.ENOSPC))

    def test_other_failures_are_not_the_filesystem_s(self):
        self.assertIsNone(server.Server._scratch_full(
            _Server(), _Job(self.workdir), {"text": "RuntimeError: bad kernel"}))


if __name__ == "__main__":
    unittest.main()
