"""A third red team's candidates (tests/data/candidates/redteam3/), written against the
harness at f8dc9b3 assuming the candidate runs arbitrary code in its own process. Each
test starts its own fork-mode CPU server, prints what it returned, then asserts what
should happen: the cheat caught (fail, the right error_class) or no gain (speedup <=
NO_GAIN, or no more than an honest control earns on the same task)."""

import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

from kforge_harness.server import procs
from tests import client
from tests.test_attacks import NO_GAIN
from tests.test_attacks_forged import show

TIMEOUT_S = 240


def run(name, task, language="cpp", options=None):
    server = client.Server(mode="fork", max_children=2)
    try:
        opts = {"trials": 2, "timing": {"enabled": True}}
        opts.update(options or {})
        req = client.request(name, "run", task, "redteam3/" + name, language=language,
                             options=opts, limits={"timeout_s": TIMEOUT_S})
        response = server.ask(req, timeout=TIMEOUT_S + 200)[req["id"]]
    finally:
        server.close()
    show(name, task, response)
    lines = response.get("log_tail", "").splitlines()
    answers = [line for line in lines if line.startswith("helper: call")]
    print("\n".join(line for line in lines if not line.startswith("helper: call"))[-1500:])
    if answers:
        print(f"{len(answers)} helper lines in the log tail, "
              f"{sum('answered' in line for line in answers)} of them answers; the last: {answers[-1]}")
    return response


DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "candidates", "redteam3")


class RedTeam3Test(unittest.TestCase):
    def assert_passed(self, response):
        self.assertEqual(response["status"], "pass", response)

    def test_row_energy_control_passes(self):
        response = run("row_energy_honest", "redteam3/row_energy")
        self.assert_passed(response)

    def test_work_done_by_a_helper_the_freeze_cannot_stop(self):
        # Its timed calls do no work: a helper the freeze does not stop computes every
        # output while the task host checks (the log's "helper: call N answered" lines).
        # What the server's clock charges (timing_plan.charged) is what stands between
        # this and a speedup: on the loaded 2-core VM the calls' brackets were as long
        # as the reference's (speedup 0.9-1.0, all spot checks passed).
        response = run("zombie_leader_helper", "redteam3/row_energy")
        if response["status"] == "pass":
            self.assertLessEqual(response["metrics"]["speedup"], NO_GAIN, response)
        else:
            self.assertEqual(response["error_class"], "cheat_detected", response)

    # Was a hole: procs._stopped read only the leader thread's state and took "Z" for
    # stopped, so a process whose leader thread had exited passed while its other threads
    # ran; and a SIGCONT the kernel sends later (the exit signal of a child killed by its
    # own SIGKILL timer) continues a frozen tree. Now every thread's state is read, and
    # the server checks the tree is still frozen, and unchanged, before each next call.
    def test_freeze_tree_keeps_a_zombie_leaders_threads_stopped(self):
        compiler = shutil.which("gcc") or shutil.which("cc")
        if compiler is None:
            self.skipTest("no C compiler: the freeze probe cannot be built")
        with tempfile.TemporaryDirectory() as build:
            probe = os.path.join(build, "probe")
            subprocess.run([compiler, "-O2", "-o", probe, os.path.join(DATA, "zombie_freeze_probe.c"),
                            "-lpthread"], check=True)
            started = time.monotonic()
            child = subprocess.Popen([probe], stdout=subprocess.PIPE, text=True)
            helper = None
            try:
                helper = int(child.stdout.readline().split()[1])
                time.sleep(0.15)
                frozen = procs.freeze_tree(child.pid)
                used = procs.cpu_used(frozen) if frozen is not None else 0
                frozen_at = time.monotonic() - started
                with open(f"/proc/{helper}/stat") as stat:
                    state = stat.read().rsplit(") ", 1)[1][:1]
                time.sleep(0.3)  # about when the server's loop would start the next call
                intact = frozen is not None and procs.still_frozen(child.pid, frozen, used)
                print(f"\nfreeze_tree returned {frozen} at {frozen_at:.2f} s; the helper "
                      f"{helper} reads {state!r}; still frozen 0.3 s later: {intact}", flush=True)
                counts = [int(line) for line in child.stdout]
            finally:
                for pid in ([helper] + procs.descendants(helper)) if helper else []:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                child.kill()
                child.wait()
                child.stdout.close()
        settled = counts[min(len(counts) - 1, int((frozen_at + 0.1) / 0.05) + 1)]
        print(f"counter at freeze + 0.1 s: {settled}, at the end: {counts[-1]}", flush=True)
        # Frozen means nothing of the tree runs until continue_tree (the count stays), or
        # the server sees that it did before the next call (still_frozen: a child that
        # died and sent SIGCONT as its exit signal is no longer in the tree).
        self.assertTrue(frozen is None or counts[-1] == settled or not intact, counts)

    # Was a hole: integer outputs were compared in float64, so int64 values beyond 2**53
    # that differ in their low bits compared equal. Now integers differ in int64.
    def test_int64_output_wrong_in_its_low_bits(self):
        response = run("int_low_bits_wrong", "redteam3/int_mix", language="python",
                       options={"timing": {"enabled": False}})
        self.assertEqual((response["status"], response["error_class"]),
                         ("fail", "numerical_mismatch"), response)

    # Was a hole in the check (no speed gained): the digest's weights were the public
    # positions, so changes of +d, -2d, +d to three neighbouring elements kept both sums.
    # Now the weights are secret (judge/outputs.digest).
    def test_input_rewritten_where_the_digest_cannot_see(self):
        response = run("input_digest_blind", "relu", language="python",
                       options={"timing": {"enabled": False}})
        self.assertEqual((response["status"], response["error_class"]),
                         ("fail", "cheat_detected"), response)


if __name__ == "__main__":
    unittest.main()
