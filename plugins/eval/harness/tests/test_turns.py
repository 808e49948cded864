"""Whose turn it is on the device (server/turns.py): a timing loop has it alone, the
rest shares it."""
import os
import unittest

from kforge_harness.server.turns import DeviceTurns

from tests import client


class Recorder:
    def __init__(self):
        self.events = []
        self.turns = DeviceTurns(lambda job: self.events.append(("alone", job)),
                                 lambda job: self.events.append(("shared", job)))

    def step(self, job, name):
        self.turns.step(job, lambda: self.events.append(("sent", job, name)))

    def alone(self, job):
        self.turns.alone(job, lambda: self.events.append(("loop", job)))

    def sent(self):
        return [e[1:] for e in self.events if e[0] == "sent"]


class DeviceTurnsTest(unittest.TestCase):
    def test_steps_go_at_once_while_no_loop_waits(self):
        r = Recorder()
        r.step("a", "fill")
        r.step("b", "fill")
        self.assertEqual(r.sent(), [("a", "fill"), ("b", "fill")])
        self.assertEqual(set(r.turns.in_flight), {"a", "b"})

    def test_a_loop_waits_for_the_steps_in_flight_and_holds_new_ones(self):
        r = Recorder()
        r.step("b", "trial")
        r.alone("a")
        self.assertNotIn(("loop", "a"), r.events)  # b's trial is in flight
        r.step("c", "fill")  # asked after the loop: held, however short
        self.assertEqual(r.sent(), [("b", "trial")])
        r.turns.done("b")
        self.assertEqual(r.events[-2:], [("alone", "a"), ("loop", "a")])
        r.step("b", "judge")
        r.step("a", "fill")  # the loop's own steps go
        self.assertEqual(r.sent(), [("b", "trial"), ("a", "fill")])
        r.turns.done("a")
        r.turns.release("a")
        # The held steps go in the order they were asked, after the device is shared again.
        self.assertEqual(r.events[-3:], [("shared", "a"), ("sent", "c", "fill"), ("sent", "b", "judge")])

    def test_a_waiting_loop_goes_before_held_steps_and_loops_go_in_order(self):
        r = Recorder()
        r.alone("a")
        r.alone("b")
        r.step("c", "fill")
        self.assertEqual([e for e in r.events if e[0] == "loop"], [("loop", "a")])
        r.turns.release("a")
        self.assertEqual([e for e in r.events if e[0] == "loop"], [("loop", "a"), ("loop", "b")])
        self.assertEqual(r.sent(), [])  # b's loop was waiting: c still waits
        r.turns.release("b")
        self.assertEqual(r.sent(), [("c", "fill")])

    def test_the_owner_asking_again_starts_at_once(self):
        r = Recorder()
        r.alone("a")
        r.alone("a")
        self.assertEqual([e for e in r.events if e[0] == "loop"], [("loop", "a"), ("loop", "a")])
        self.assertEqual([e for e in r.events if e[0] == "alone"], [("alone", "a")])

    def test_a_job_that_ends_gives_up_what_it_waits_for_not_what_is_under_way(self):
        r = Recorder()
        r.step("b", "trial")
        r.alone("a")
        r.alone("c")
        r.step("b", "judge")  # held
        r.turns.forget("b")  # b ended: its judge is dropped, its trial still runs
        self.assertNotIn(("loop", "a"), r.events)
        r.turns.done("b")  # the host answered it: now a goes
        self.assertEqual(r.events[-2:], [("alone", "a"), ("loop", "a")])
        r.turns.forget("a")  # the owner ended: the device goes to the next loop
        self.assertEqual(r.events[-3:], [("shared", "a"), ("alone", "c"), ("loop", "c")])
        r.turns.release("c")
        self.assertEqual(r.sent(), [("b", "trial")])

    def test_a_process_gone_ends_its_steps(self):
        r = Recorder()
        r.turns.begin("child")  # a child's trial
        r.alone("a")
        self.assertNotIn(("loop", "a"), r.events)
        r.turns.gone("child")  # it died mid-trial (killed, say): nothing of it runs
        self.assertIn(("loop", "a"), r.events)
        r.turns.done("child")  # a late word changes nothing
        self.assertNotIn("child", r.turns.in_flight)

    def test_steps_of_one_job_count_one_by_one(self):
        r = Recorder()
        r.turns.begin("b")
        r.step("b", "fill")
        r.alone("a")
        r.turns.done("b")
        self.assertNotIn(("loop", "a"), r.events)
        r.turns.done("b")
        self.assertIn(("loop", "a"), r.events)


def _request(request_id, candidate, **options):
    return client.request(request_id, "run", "relu", candidate, language="python",
                          options=options, limits={"timeout_s": 120})


class NeighboursTest(unittest.TestCase):
    """Through a server: while one job's loop has the device, the other jobs' trials wait
    and their processes are stopped, and neither counts against their limits."""

    def test_a_neighbour_is_stopped_while_a_loop_runs_and_is_not_blamed(self):
        server = client.Server(mode="fork", max_children=2)
        try:
            timed = _request("timed", None, trials=2,
                             timing={"enabled": True, "warmup": 3, "trials": 1000, "baseline": "eager"})
            # 60 trials of at least 0.1 s each: still running when the timed job's loops start.
            neighbour = _request("neighbour", "turns/ticking_neighbour", trials=60)
            responses = server.ask(timed, neighbour, timeout=400)
        finally:
            server.close()
        timed, neighbour = responses["timed"], responses["neighbour"]
        self.assertEqual(timed["status"], "pass", timed)
        # The neighbour's own thread saw its process stopped (and said so in a trial):
        # a loop ran while it lived, and nothing of it ran meanwhile.
        self.assertEqual(neighbour["error_class"], "runtime_error", neighbour)
        self.assertIn("stopped for", neighbour["message"])
        self.assertGreater(neighbour["metrics"]["turn_wait_seconds"], 1.0, neighbour)

    def test_a_neighbour_continued_by_its_own_timer_is_caught(self):
        # Under the signal freezer (a host without cgroup v2, simulated): stopped for the
        # other job's loop, its timer continues it every 10 ms and its thread works beside
        # that loop; the server looks again when the loop ends.
        server = client.Server(mode="fork", max_children=2, python=SIGNAL_FREEZER)
        try:
            timed = _request("timed", None, trials=2,
                             timing={"enabled": True, "warmup": 3, "trials": 300, "baseline": "eager"})
            neighbour = client.request("neighbour", "run", "relu", "turns/timer_continued_neighbour",
                                       language="cpp", options={"trials": 60}, limits={"timeout_s": 300})
            responses = server.ask(timed, neighbour, timeout=600)
        finally:
            server.close()
        timed, neighbour = responses["timed"], responses["neighbour"]
        self.assertEqual(timed["status"], "pass", timed)
        self.assertEqual(neighbour["error_class"], "cheat_detected", neighbour)
        self.assertIn("while another job's timing loop had the device", neighbour["message"])


SIGNAL_FREEZER = os.path.join(client.DATA, "candidates", "redteam6", "signal_freezer_python.sh")


if __name__ == "__main__":
    unittest.main()
