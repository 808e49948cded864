"""The server's hold on a child's process tree between timed calls (server/procs.py):
freeze_tree stops every process below a pid and returns them only once all are seen
stopped and no other has appeared; continue_tree resumes exactly those."""

import os
import signal
import subprocess
import sys
import time
import unittest

from kforge_harness.server.procs import (_ran_since, continue_tree, descendants, freeze_tree, cpu_used,
                                         still_frozen)

# Two processes that continue each other as fast as they can: never all stopped at once.
MUTUAL = """
import os, signal, sys
other = os.fork()
if other == 0:
    other = os.getppid()
while True:
    try:
        os.kill(other, signal.SIGCONT)
    except ProcessLookupError:
        sys.exit(0)
"""


def state(pid):
    with open(f"/proc/{pid}/stat", "rb") as handle:
        stat = handle.read()
    return stat[stat.rfind(b")") + 2:stat.rfind(b")") + 3]


def comm(pid):
    with open(f"/proc/{pid}/comm", encoding="utf-8") as handle:
        return handle.read()


class FreezeTest(unittest.TestCase):
    def start(self, command):
        root = subprocess.Popen(command, start_new_session=True)
        self.addCleanup(root.wait)
        self.addCleanup(os.killpg, root.pid, signal.SIGKILL)
        return root

    def wait_for(self, root, count):
        deadline = time.monotonic() + 10
        while len(descendants(root.pid)) < count:
            self.assertLess(time.monotonic(), deadline, "the tree did not start")
            time.sleep(0.01)

    def test_a_tree_is_frozen_whole_and_continued_whole(self):
        root = self.start(["sh", "-c", "sh -c 'sleep 60 & sleep 60 & wait' & sleep 60 & wait"])
        self.wait_for(root, 4)
        frozen = freeze_tree(root.pid)
        self.assertEqual(sorted(frozen), sorted(descendants(root.pid)))
        self.assertEqual(len(frozen), 4)
        self.assertEqual({state(pid) for pid in frozen}, {b"T"})
        continue_tree(frozen)
        time.sleep(0.05)
        self.assertNotIn(b"T", {state(pid) for pid in frozen})

    def test_processes_that_continue_each_other_stay_stopped_or_are_refused(self):
        # Both are usually stopped before either continues the other again: then neither
        # can run. Otherwise freeze_tree must say so, never return a tree that runs.
        root = self.start(["sh", "-c", f"{sys.executable} -c '{MUTUAL}' & wait"])
        self.wait_for(root, 2)
        for _ in range(20):
            frozen = freeze_tree(root.pid)
            if frozen is None:
                continue
            self.assertEqual(len(frozen), 2)
            time.sleep(0.02)
            self.assertEqual({state(pid) for pid in frozen}, {b"T"}, "a frozen process ran")
            continue_tree(frozen)

    def test_a_busy_process_stopped_anew_each_time_is_still_frozen(self):
        # A thread stopped in the middle of its time on a CPU reads stopped before the
        # kernel adds that stretch to its runtime (it does so as the thread leaves the
        # CPU): a look taken in between must not make the stretch look like work done
        # while frozen (seen: an honest reference blamed, 0.7 ms "run" while stopped).
        root = self.start(["sh", "-c", f"{sys.executable} -c 'while True: pass' & wait"])
        self.spinner(root)
        misses = 0
        for _ in range(200):
            frozen = freeze_tree(root.pid)
            used = cpu_used(frozen)
            time.sleep(0.002)
            misses += not still_frozen(root.pid, frozen, used)
            continue_tree(frozen)
            time.sleep(0.002)
        self.assertEqual(misses, 0, "an honest stop looked like a run")

    def test_a_stopped_trees_late_charged_stretch_is_not_a_run(self):
        # cpu_used entries: (pid, 0, ticks) per process, (pid, tid, ns) per thread.
        before = ((10, 0, 5), (10, 10, 53_016_081), (10, 11, 1_000))
        self.assertFalse(_ran_since(before, ((10, 0, 5), (10, 10, 53_713_807), (10, 11, 1_000))),
                         "0.7 ms charged late to a stopping thread (seen) is no run")
        self.assertFalse(_ran_since(before, ((10, 0, 5), (10, 10, 53_016_081))), "a thread that was exiting")
        self.assertTrue(_ran_since(before, ((10, 0, 7), (10, 10, 83_016_081), (10, 11, 1_000))),
                        "30 ms of work is a run")
        self.assertTrue(_ran_since(before, before + ((10, 12, 1),)), "a thread born is a run")

    def spinner(self, root):
        self.wait_for(root, 1)
        spinner, = descendants(root.pid)
        deadline = time.monotonic() + 10
        while not comm(spinner).startswith("python"):  # forked by sh, not yet exec'd
            self.assertLess(time.monotonic(), deadline, "the spinner did not start")
            time.sleep(0.01)
        return spinner

    def test_a_process_that_ran_and_stopped_itself_again_is_not_still_frozen(self):
        # A timer sending SIGCONT, work, then SIGSTOP to itself: stopped again when the
        # server looks, but the CPU time it used since the freeze shows.
        root = self.start(["sh", "-c", f"{sys.executable} -c 'while True: pass' & wait"])
        spinner = self.spinner(root)
        frozen = freeze_tree(root.pid)
        used = cpu_used(frozen)
        time.sleep(0.2)
        self.assertTrue(still_frozen(root.pid, frozen, used), "a tree left stopped")
        self.assertEqual(frozen, [spinner])
        os.kill(spinner, signal.SIGCONT)
        time.sleep(0.3)
        os.kill(spinner, signal.SIGSTOP)
        deadline = time.monotonic() + 5
        while state(spinner) != b"T":
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.01)
        self.assertFalse(still_frozen(root.pid, frozen, used), "the work between looks was missed")


if __name__ == "__main__":
    unittest.main()
