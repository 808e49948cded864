"""redteam10: attacks on the device turn-taking of the harness server (server/turns.py,
DeviceTurns, and how server.py pauses and continues neighbours), through a real server on
the CPU. Each test asserts the SECURE outcome: a test that fails is a hole. Run them one
by one (`-m unittest tests.test_attacks_redteam10.Class.test`): the VM is noisy, and the
suite's servers must not run beside another suite's."""

import os
import re
import tempfile
import time
import unittest

from tests import client
from tests.test_attacks_forged import show

TIMING = {"enabled": True, "warmup": 3, "trials": 1500, "baseline": "eager"}


def _timed(request_id, candidate, timeout_s, trials=2, timing=TIMING, task="relu"):
    return client.request(request_id, "run", task, candidate, language="python",
                          options={"trials": trials, "timing": timing},
                          limits={"timeout_s": timeout_s})


def _stamps(log, tag):
    """(call or start, time) pairs of the lines `tag` a candidate wrote to its log."""
    return [(float(a), float(b)) for a, b in re.findall(rf"^{tag} (\S+) (\S+)$", log, re.M)]


class WaitForATurnIsNotTheCandidatesTime(unittest.TestCase):
    """A neighbour's trial that takes long (slow_trial: 45 s, a sleep, inside its own limit
    of 120 s) is a step in flight: no timing loop starts until it is answered. The victim
    (an honest ReLU, limit 25 s) finishes its trials in a few seconds and asks for its
    reference's timing; it is frozen meanwhile (reference_wait_from), but its deadline is
    only moved on in _run_loop, once the loop has started, and _enforce_deadlines kills it
    first. The internal reference job has the victim's limit too and runs out likewise.
    Before this change the timed job had the device from admission to verdict: no
    neighbour's trial could hold up its loops. Secure: the victim passes (its wait for a
    turn is no part of its limit).
    Seen at b44a824: victim fail/timeout "wall-clock limit of 25 s hit during candidate
    forward" (it was waiting for a loop, not in a forward), child_seconds 25.11,
    turn_wait_seconds 1.7e-05 (the wait is not even counted); slow_trial pass. The own-loop
    variant: fail/timeout, child_seconds 25.08, turn_wait_seconds 2.5e-05, its log showing
    its two trials and no loop call."""

    def test_a_slow_neighbour_does_not_time_the_victim_out(self):
        server = client.Server(mode="fork", max_children=2)
        try:
            slow = _timed("slow", "redteam10/slow_trial", 120, timing={"enabled": False})
            victim = _timed("victim", None, 25)
            responses = server.ask(slow, victim, timeout=200)
        finally:
            server.close()
        show("victim (the reference as its own candidate)", "relu", responses["victim"])
        show("slow_trial", "relu", responses["slow"])
        self.assertEqual(responses["slow"]["status"], "pass", responses["slow"])
        self.assertEqual(responses["victim"]["status"], "pass", responses["victim"])

    def test_a_slow_neighbour_does_not_time_out_a_victim_waiting_for_its_own_loop(self):
        """The same with the reference's record stored by a first job: the victim waits
        for its own loop (_start_loop), not frozen, its limit running until start()."""
        server = client.Server(mode="fork", max_children=2)
        try:
            first = _timed("first", None, 120)
            self.assertEqual(server.ask(first, timeout=200)["first"]["status"], "pass")
            slow = _timed("slow", "redteam10/slow_trial", 120, timing={"enabled": False})
            victim = _timed("victim", "redteam10/loop_stamps", 25)
            server.send(slow)
            time.sleep(3.0)  # the slow trial is under way
            server.send(victim)
            responses = {r["id"]: r for r in server.receive(2, timeout=200)}
        finally:
            server.close()
        show("victim (loop_stamps)", "relu", responses["victim"])
        show("slow_trial", "relu", responses["slow"])
        self.assertEqual(responses["slow"]["status"], "pass", responses["slow"])
        self.assertEqual(responses["victim"]["status"], "pass", responses["victim"])


class ADecidedNeighbourIsStoppedToo(unittest.TestCase):
    """A `compile` request (linger_after_verdict) passes at once, at its child's `ready`;
    the server closes its commands and waits for the child to exit by itself. The
    candidate keeps two threads of work going for 40 s more. _decide forgot its turns and
    _pause_neighbours skips a decided job: it runs beside the honest job's timing loops
    (loop_stamps writes when its calls ran). Before this change a timed job had the device
    alone until its verdict, and no request of the same server ran beside it. Secure: no
    call of the honest job's loops runs while the decided neighbour works.
    Seen at b44a824: lingered 26270.191..26310.197 (40.0 s); all 60 stamped loop calls of
    the honest job (26274.262..26278.222) inside it; honest pass at 0.7642x (the same job
    alone: 0.9664x and 0.8052x, so no harm to its speedup is shown on this VM, only the
    overlap). Closed: a decided job is paused like any other until its child is gone; the
    candidate's own threads then make no progress through the honest job's loop calls."""

    def test_no_loop_call_while_a_decided_neighbour_works(self):
        server = client.Server(mode="fork", max_children=2)
        try:
            lingering = client.request("linger", "compile", "relu", "redteam10/linger_after_verdict",
                                       language="python", limits={"timeout_s": 120})
            honest = _timed("honest", "redteam10/loop_stamps", 120)
            responses = server.ask(lingering, honest, timeout=300)
        finally:
            server.close()
        linger, honest = responses["linger"], responses["honest"]
        show("linger_after_verdict (compile)", "relu", linger)
        show("loop_stamps", "relu", honest)
        self.assertEqual(honest["status"], "pass", honest)
        spans = _stamps(linger["log_tail"], "LINGER")
        self.assertTrue(spans, linger["log_tail"][-2000:])
        start, end = spans[-1]
        calls = [(n, t) for n, t in _stamps(honest["log_tail"], "STAMP") if n > 2]  # loop calls only
        stopped = _stamps(linger["log_tail"], "GAP")  # stretches its thread made no progress
        beside = [(n, t) for n, t in calls
                  if start <= t <= end and not any(a <= t <= b for a, b in stopped)]
        print(f"  lingered {start:.3f}..{end:.3f} ({end - start:.1f} s), stopped {len(stopped)} "
              f"times; honest loop calls stamped: {len(calls)}, of them while the neighbour "
              f"worked: {len(beside)}"
              + (f" ({beside[0][1]:.3f}..{beside[-1][1]:.3f})" if beside else ""), flush=True)
        self.assertEqual(beside, [], "loop calls ran beside a decided neighbour's work")


class ADecidedJobsHostStepStillCounts(unittest.TestCase):
    """A job ended while one of its task host's steps is in flight: turns.forget() drops
    the step, and a loop that waits for it starts while the host still works. Here the
    neighbour (forged_failure, on fill_spin_relu: the reference recomputed for its second
    trial's fill keeps both cores busy for 14 s in its task host) writes a forged failure 8
    s into that fill; the honest job (loop_stamps, relu, its reference's record already
    stored by a first job) is waiting for its loop by then. Secure: no call of the honest
    job's loop runs while the neighbour's task host works on the step it was sent.
    Seen at b44a824: the host's fill ran 26490.810..26504.831; all 60 stamped loop calls of
    the honest job (26498.970..26501.733) inside it; honest pass at 0.9905x; the neighbour
    runtime_error "candidate forward: RuntimeError: forged"."""

    def test_no_loop_call_beside_a_forgotten_host_step(self):
        spin_log = os.path.join(tempfile.mkdtemp(prefix="rt10-"), "spin.txt")
        server = client.Server(mode="fork", max_children=2, store_mb=0,
                               extra_env={"RT10_SPIN_LOG": spin_log})
        try:
            first = _timed("first", None, 120)  # the relu reference's record, stored
            self.assertEqual(server.ask(first, timeout=200)["first"]["status"], "pass")
            forged = client.request("forged", "run", "redteam10/fill_spin_relu",
                                    "redteam10/forged_failure", language="python",
                                    options={"trials": 2, "timing": {"enabled": False}},
                                    limits={"timeout_s": 120})
            server.send(forged)
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline:  # the neighbour's fill has begun
                if os.path.exists(spin_log):
                    with open(spin_log, encoding="utf-8") as handle:
                        if "start" in handle.read():
                            break
                time.sleep(0.1)
            honest = _timed("honest", "redteam10/loop_stamps", 120)
            server.send(honest)
            responses = {r["id"]: r for r in server.receive(2, timeout=200)}
        finally:
            server.close()
        with open(spin_log, encoding="utf-8") as handle:
            spins = [(float(a), float(b)) for a, b in
                     re.findall(r"^SPIN (\S+) (\d\S*)$", handle.read(), re.M)]
        show("forged_failure", "fill_spin_relu", responses["forged"])
        show("loop_stamps", "relu", responses["honest"])
        self.assertEqual(responses["honest"]["status"], "pass", responses["honest"])
        self.assertTrue(spins)
        calls = [(n, t) for n, t in _stamps(responses["honest"]["log_tail"], "STAMP") if n > 2]
        beside = [(n, t) for n, t in calls if any(a <= t <= b for a, b in spins)]
        print(f"  host spins {spins}; honest loop calls stamped: {len(calls)}, of them while the "
              f"neighbour's host step ran: {len(beside)}"
              + (f" ({beside[0][1]:.3f}..{beside[-1][1]:.3f})" if beside else ""), flush=True)
        self.assertEqual(beside, [], "loop calls ran beside a forgotten host step")


class AConfirmationDoesNotPullTheRecordFromAWaitingLoop(unittest.TestCase):
    """Two honest candidates of one task wait for the same reference timing. When it is
    stored, both ask for their loops (_reference_timed); the first runs. Its speedup is
    over confirm_speedup, so _loop_done releases the device and _time_reference_anew
    deletes the stored record, while the loop's last host step still counts as in flight
    (done() follows the callback): the second job's loop starts only afterwards, and
    _run_loop reads entry.timings[key], which is gone (KeyError, raised out of the
    server's main loop through turns.done()). Before this change the second job could not
    be timed beside the first. Secure: both are answered, with a pass.
    Seen at b44a824, fork and spawn: the server exits with status 1 after 0 responses,
    "KeyError: '[3122909051192894670, 3, 1500, true, \"eager\"]'" from _run_loop
    (server.py:979) through turns.done() in _host_answer's finally. No attack is needed:
    two honest candidates of one task faster than its reference do it; a hostile one can
    end every job of its server so whenever another job of its task waits for a loop."""

    def test_two_fast_candidates_of_one_task_both_pass(self):
        self._both_pass("fork")

    def test_two_fast_candidates_of_one_task_both_pass_spawn(self):
        self._both_pass("spawn")

    def _both_pass(self, mode):
        server = client.Server(mode=mode, max_children=2)
        try:
            first = _timed("first", "redteam10/fast_relu", 120, task="redteam10/slow_relu")
            second = _timed("second", "redteam10/fast_relu", 120, task="redteam10/slow_relu")
            server.send(first, second)
            try:
                responses = {r["id"]: r for r in server.receive(2, timeout=200)}
            except (EOFError, TimeoutError) as exc:
                code = server.process.wait(timeout=30)
                self.fail(f"the server ended ({code}) before answering both: {exc}")
        finally:
            server.close()
        for name in ("first", "second"):
            show(f"{name} ({mode})", "slow_relu", responses[name])
            self.assertEqual(responses[name]["status"], "pass", responses[name])


if __name__ == "__main__":
    unittest.main()
