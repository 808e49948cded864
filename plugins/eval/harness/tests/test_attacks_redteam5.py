"""A fifth red team's candidates (tests/data/candidates/redteam5/), written against the
harness at d0efba1 (HARNESS_VERSION 13): its cgroup v2 freezer between timed calls
(server/freezer.py) and its allowance of the reference's rounding noise for integer
outputs (judge/compare.py _within_integer_noise). Each test starts its own fork-mode CPU
server, prints what it returned, then asserts what should happen: the cheat caught (fail,
the right error_class), no gain (speedup <= NO_GAIN), or an honest pass. Holes still
open were marked expectedFailure, with what the server returned at d0efba1; the four
holes it found were closed after it (each test's comment says how)."""

import glob
import os
import signal
import time
import unittest

from kforge_harness.server import freezer
from tests import client
from tests.test_attacks import NO_GAIN
from tests.test_attacks_forged import show

TIMEOUT_S = 240

# The most a neighbour's CPU load moved a reference timed beside it, after the server's
# spin on slow freezes was removed (see FreezerTest).
BESIDE_A_STALLER = 1.5


def request(name, task, language, options=None, **task_fields):
    opts = {"trials": 2, "timing": {"enabled": True}}
    opts.update(options or {})
    return client.request(name, "run", task, "redteam5/" + name, language=language,
                          options=opts, limits={"timeout_s": TIMEOUT_S}, **task_fields)


def run(name, task, language="python", options=None, **task_fields):
    server = client.Server(mode="fork", max_children=2)
    try:
        req = request(name, task, language, options, **task_fields)
        response = server.ask(req, timeout=TIMEOUT_S + 200)[req["id"]]
    finally:
        server.close()
    show(name, task, response)
    print(response.get("log_tail", "")[-800:])
    return response


def _frozen(group):
    try:
        with open(os.path.join(group, "cgroup.events"), encoding="ascii") as handle:
            return "frozen 1" in handle.read()
    except OSError:
        return False


class FreezerTest(unittest.TestCase):
    def setUp(self):
        how = client.machine_freezer()
        if how != "cgroup v2":
            self.skipTest(f"no cgroup v2 freezer here (freezer: {how}); these candidates "
                          "attack the cgroup freezer")

    def test_reference_timed_while_a_job_beside_holds_the_freeze_off(self):
        # Closed: the server no longer waits for a freeze in its loop (server.py
        # _freeze_then / _advance_freeze): a group slow to freeze holds up only its own
        # job; after it, the cheat below got 0.53. Was a HOLE at d0efba1. Two jobs of one
        # attacker in one server (3 children):
        # freeze_held_in_kernel (relu, 100 timed calls) has a thread enter a 0.2 s
        # mmap(MAP_POPULATE) as each forward returns, so each of its freezes lands only
        # when that system call returns: Group.freeze() spun 150-300 ms in the server's
        # only thread at 102 of 104 freezes (measured with a probe around it), under
        # FREEZE_PATIENCE_S, never flagged; that job itself passed (speedup 0.005).
        # 5 s later, matmul_after_the_stall (honest code: the reference's x @ w; its
        # first warm-up call sleeps 35 s) has its reference timed during those stalls:
        # the reference's median 252 ms (85.6 ms on a quiet machine), gap_ms 160; the
        # candidate's own loop runs after them: status pass, speedup 2.75 (2.55 in an
        # earlier run; 1.55 and 1.66 in this test's runs), speedup_confirmed,
        # timing_charged_ms 0, timing_measured_again 0.
        # Alone the same candidate got 0.56. A CPU hog that burns both cores in user
        # space through its trials instead (no freezer involved) moved the reference to
        # 115 ms only (speedup 1.13): it is the kernel work between calls and the
        # server's spin that slow the reference this much.
        # Closing it: never wait for a freeze inside the server's loop (write
        # cgroup.freeze, then watch cgroup.events, which is pollable, from the selector,
        # and hold the job's next step until it reports frozen); count the time a group
        # takes to freeze against the candidate (or reject a group that is slow to freeze
        # at many calls: a task inside the kernel at the end of every call is not an
        # honest kernel's); and measure a reference's loop again when the load it was
        # measured under differs from the candidate's (its own wall times or exchanges far
        # above the candidate's), not only when the candidate's report disagrees with the
        # clock.
        server = client.Server(mode="fork", max_children=3)
        try:
            staller = request("freeze_held_in_kernel", "relu", "cpp",
                              options={"timing": {"enabled": True, "trials": 100}})
            cheat = request("matmul_after_the_stall", "redteam5/matmul", "python")
            server.send(staller)
            time.sleep(5)  # the staller's timed loop under way
            server.send(cheat)
            responses = {r["id"]: r for r in server.receive(2, timeout=TIMEOUT_S + 200)}
        finally:
            server.close()
        for name, task in (("freeze_held_in_kernel", "relu"), ("matmul_after_the_stall", "redteam5/matmul")):
            show(name, task, responses[name])
        response = responses["matmul_after_the_stall"]
        if response["status"] == "pass":
            # Not NO_GAIN: what is left is the staller's kernel work competing for the
            # CPU with the reference's loop beside it (0.53 and 1.23 in two runs after the
            # fix, before the server took turns: each loop now has the device alone and
            # the other jobs' processes are stopped while it runs, server/turns.py); the
            # server's spin gave 1.55 to 2.75.
            self.assertLessEqual(response["metrics"]["speedup"], BESIDE_A_STALLER, response)
        else:
            self.assertEqual(response["error_class"], "cheat_detected", response)


    def test_nothing_left_frozen_after_the_server_is_killed(self):
        # Closed: the sandbox's PID 1 now has SIGKILL as its parent-death signal
        # (sandbox._REAPER_ARGV, setpriv), and its death kills the namespace's processes,
        # frozen or not. Was a HOLE at d0efba1: the server killed (SIGKILL) while a candidate's group is
        # frozen between timed calls leaves the group, and the sandbox's PID 1 (`cat`,
        # which exits at the EOF of its pipe only once it runs) frozen in it with the PID
        # namespace alive, until another server starts in the same cgroup
        # (freezer._remove_stale); a candidate process without a parent-death signal
        # (one it forked) would stay there too, with its memory. Seen: 5 s after the
        # kill, kforge-<pid>/child-1 "populated 1 frozen 1" holding /usr/bin/cat (ppid 1);
        # in this test's runs, the first group seen frozen (child-2) kept one process.
        # The signal freeze had the same fate (a SIGSTOPped tree), but the cgroup is meant
        # to be the kernel's promise. Closing it: the supervisor (outside the group, with
        # a parent-death signal from the server) kills its group (cgroup.kill) when the
        # server dies; or each group is made with a process outside it that watches the
        # server.
        server = client.Server(mode="fork", max_children=2)
        pid = server.process.pid
        try:
            server.send(request("freeze_held_in_kernel", "relu", "cpp",
                                options={"timing": {"enabled": True, "trials": 100}}))
            # Where the server makes them: below its own cgroup, which is this process's.
            base = os.path.join(freezer._cgroup2_mount(), freezer._own_cgroup().lstrip("/"))
            groups = os.path.join(base, f"kforge-{pid}", "child-*")
            deadline = time.monotonic() + 120
            while not any(_frozen(group) for group in glob.glob(groups)):  # its timed loop
                self.assertLess(time.monotonic(), deadline, "the candidate was never frozen")
                time.sleep(0.05)
            os.kill(pid, signal.SIGKILL)
            server.process.wait()
            time.sleep(5)
            left = {}
            for group in glob.glob(groups):
                with open(os.path.join(group, "cgroup.procs"), encoding="ascii") as handle:
                    procs = handle.read().split()
                if procs:
                    left[group] = procs
            print(f"\nleft after the server's SIGKILL: {left}", flush=True)
        finally:
            server.process.stdout.close()
            server.process.stdin.close()
            client.machine_freezer()  # a server's start removes a dead server's groups
        self.assertEqual(left, {})


# KernelBench's own comparison: torch.allclose at 1e-2, no whole-output bounds.
KERNELBENCH_RULE = {"kind": "allclose", "atol": {"float32": 1e-2}, "rtol": {"float32": 1e-2}}


class IntegerNoiseTest(unittest.TestCase):
    # compare._within_integer_noise forgives an integer output that differs from the
    # reference within 16 ||r - r'||, r' the reference at inputs moved by an ulp. The
    # task (tasks/redteam5/vote_argmax) has an exact integer output, but ties: the ulp
    # moves break them at random, which plan() records as rounding noise (offline, 119
    # of 4096 rows flip at one seed, ||r - r'|| ~ 1000, 16x ~ 16000).

    def test_honest_argmax_of_exact_scores(self):
        response = run("vote_argmax_honest", "redteam5/vote_argmax",
                       options={"timing": {"enabled": False}})
        self.assertEqual(response["status"], "pass", response)

    def test_argmax_of_tied_scores_answered_with_one_winner_default_rule(self):
        # Closed under the default rule, by its max_coarse_share (1%), not by the noise
        # bound: at d0efba1, fail numerical_mismatch (about 80% of the elements off, more
        # than the 1.00% allowed). The noise bound alone forgave it.
        response = run("vote_argmax_one_winner", "redteam5/vote_argmax",
                       options={"timing": {"enabled": False}})
        self.assertEqual((response["status"], response["error_class"]), ("fail", "numerical_mismatch"),
                         response)

    def test_honest_fixed_point_matmul_summed_in_two_halves(self):
        # Closed: an integer output within the reference's rounding noise is no longer
        # held to the coarse share (compare._whole_output_failure's `forgiven`): the
        # noise's count bound stands for it. Was a HOLE (an honest kernel rejected) at d0efba1: round(4096 x @ w) (a Q12 output),
        # its reduction split in two float32 halves as a tiled kernel sums: fail
        # numerical_mismatch "2.51% of elements are off by more than 0 + 0*|reference| (the
        # coarse bound), more than the 1.00% allowed; max abs diff 1, ... max relative
        # error 1e+30". ||c - r|| ~ 115 is within 16 times the reference's own rounding
        # noise (~110, 16x ~ 1750, offline): _within_integer_noise forgives it, then the
        # default rule's max_coarse_share, whose coarse bound is 0 for integers, counts
        # every element off by one step. Closing it: where the integer noise bound
        # forgives an output, the coarse share should not count against it the elements
        # its rounding moves (or allow the share of elements the reference's own
        # perturbation moved, times a factor).
        response = run("fixed_point_matmul_split_k", "redteam5/fixed_point_matmul",
                       options={"timing": {"enabled": False}})
        self.assertEqual(response["status"], "pass", response)

    def test_argmax_of_tied_scores_answered_with_one_winner_kernelbench_rule(self):
        # Closed: the differing elements are bounded by 4 times those the ulp moved plus
        # 4 (compare._within_integer_noise): 2857 of 4096 rows, over 384. Was a HOLE at
        # d0efba1: under an allclose rule without max_coarse_share (as
        # KernelBench's), one winner for all rows (a vector-matrix product instead of
        # the matrix product) passes every trial and every spot check: 3 runs of 3 at
        # d0efba1, speedup 5.8x, 46x and 13x, speedup_confirmed, max_abs_diff 158. An earlier
        # version of it, zeros, passed with speedup 400x and 50x in two runs and was
        # caught in a third (a spot check where the dominant class was large enough,
        # ||zeros - r|| = 16 * 840), so it was made input-dependent: ||c - r|| 4000-9000
        # against 16N 15000-27000 over 8 seeds offline. The noise the judge uses is not
        # rounding noise: an exact output's ties broken by the ulp moves. Closing it:
        # tell ties from roundings (an output whose values at the unperturbed inputs are
        # exact, every score an integer in float32, has no rounding noise; or perturb
        # twice and forgive only elements that moved in both), and bound the share of
        # differing integer elements by the share the reference's own perturbation
        # moved (times a factor), not only ||c - r|| as a whole: 16x in L2 is 256x in
        # the count of elements off by as much.
        response = run("vote_argmax_one_winner", "redteam5/vote_argmax",
                       options={"rule": KERNELBENCH_RULE})
        if response["status"] == "pass":
            self.assertLessEqual(response["metrics"]["speedup"], NO_GAIN, response)
        else:
            self.assertEqual(response["error_class"], "numerical_mismatch", response)


if __name__ == "__main__":
    unittest.main()
