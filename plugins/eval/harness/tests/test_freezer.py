"""The cgroup v2 freezer (server/freezer.py): what it freezes stays frozen whatever the
processes do (a SIGCONT from outside, a SIGCONT timer of their own, a fork), a thaw lets
them run, and its groups are removed with what is left in them. Skipped, saying why,
where this machine gives the server no cgroups (the server freezes with signals there,
test_procs)."""

import mmap
import os
import signal
import struct
import subprocess
import sys
import time
import unittest

from kforge_harness.server.freezer import Freezer, _own_cgroup, _cgroup2_mount

# Counts as fast as it can into the shared page (the descriptor argv[1]), forks a second counter, and arms
# a POSIX timer that sends it SIGCONT every millisecond.
COUNTER = r"""
import ctypes, mmap, os, signal, struct, sys, time
page = mmap.mmap(int(sys.argv[1]), 4096)
libc = ctypes.CDLL(None, use_errno=True)

class SigEvent(ctypes.Structure):
    _fields_ = [("value", ctypes.c_void_p), ("signo", ctypes.c_int), ("notify", ctypes.c_int),
                ("pad", ctypes.c_byte * 48)]

class Spec(ctypes.Structure):
    _fields_ = [("interval", ctypes.c_long * 2), ("value", ctypes.c_long * 2)]

event = SigEvent(signo=signal.SIGCONT, notify=0)
timer = ctypes.c_void_p()
assert libc.timer_create(1, ctypes.byref(event), ctypes.byref(timer)) == 0
spec = Spec((0, 1000000), (0, 1000000))
assert libc.timer_settime(timer, 0, ctypes.byref(spec), None) == 0
slot = 8 if os.fork() == 0 else 0
count = 0
while True:
    count += 1
    page[slot:slot + 8] = struct.pack("q", count)
"""


class FreezerTest(unittest.TestCase):
    def setUp(self):
        self.freezer = Freezer.open()
        self.addCleanup(self.freezer.close)
        if self.freezer.root is None:
            self.skipTest(f"no cgroup freezer for this user here: {self.freezer.why_not}")

    def counters(self):
        fd = os.memfd_create("counters")
        os.ftruncate(fd, 4096)
        page = mmap.mmap(fd, 4096)
        child = subprocess.Popen([sys.executable, "-c", COUNTER, str(fd)], pass_fds=(fd,),
                                 start_new_session=True)
        os.close(fd)
        self.addCleanup(child.wait)
        self.addCleanup(lambda: os.killpg(child.pid, signal.SIGKILL))
        deadline = time.monotonic() + 10
        while 0 in struct.unpack("qq", page[:16]):  # both counting
            self.assertLess(time.monotonic(), deadline, "the counters did not start")
            time.sleep(0.01)
        return child, page

    def test_a_frozen_group_runs_nothing_until_it_is_thawed(self):
        child, page = self.counters()
        pids = [child.pid] + [int(p) for p in open(f"/proc/{child.pid}/task/{child.pid}/children").read().split()]
        self.assertEqual(len(pids), 2)
        group = self.freezer.group(pids)
        self.assertIsNotNone(group, self.freezer.why_not)
        group.start_freeze()
        self.assertTrue(group.frozen_within(1.0))
        self.assertTrue(group.frozen())
        before = page[:16]
        for pid in pids:  # a continue from outside, beside the process's own timer
            os.kill(pid, signal.SIGCONT)
        time.sleep(0.2)
        self.assertEqual(page[:16], before, "a frozen process ran")
        self.assertTrue(group.frozen())
        group.thaw()
        time.sleep(0.2)
        after = struct.unpack("qq", page[:16])
        self.assertTrue(all(a > b for a, b in zip(after, struct.unpack("qq", before))), after)

    def test_a_removed_group_takes_its_processes_with_it(self):
        child, _ = self.counters()
        group = self.freezer.group([child.pid])  # its forked counter was born outside
        group.start_freeze()
        self.assertTrue(group.frozen_within(1.0))
        group.remove()
        self.assertEqual(child.wait(timeout=10), -signal.SIGKILL)
        deadline = time.monotonic() + 5
        while os.path.exists(group.path):
            self.freezer.sweep()
            self.assertLess(time.monotonic(), deadline, "the group was not removed")
            time.sleep(0.01)

    def test_a_dead_servers_groups_are_removed_by_the_next(self):
        base = os.path.join(_cgroup2_mount(), _own_cgroup().lstrip("/"))
        dead = subprocess.Popen(["true"])
        dead.wait()  # a pid no process has now (nor, within this test, gets again)
        stale = os.path.join(base, f"kforge-{dead.pid}")
        os.makedirs(os.path.join(stale, "child-1"))
        Freezer.open()  # this process's directory exists already: opened again, not closed
        self.assertFalse(os.path.exists(stale))


if __name__ == "__main__":
    unittest.main()
