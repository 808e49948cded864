"""redteam11: attacks on the device turn-taking of the harness server at 8fa5a59
(server/turns.py, DeviceTurns, and how server.py holds, pauses and continues jobs),
through a real server on the CPU. Each test asserts the SECURE outcome: a test that fails
is a hole. Run them one by one (`-m unittest tests.test_attacks_redteam11.Class.test`):
the VM is noisy, and the suite's servers must not run beside another suite's."""

import glob
import os
import re
import tempfile
import time
import unittest

from tests import client
from tests.test_attacks_forged import show

TIMING = {"enabled": True, "warmup": 3, "trials": 200, "baseline": "eager"}


def _timed(request_id, candidate, timeout_s, trials=5, timing=TIMING, task="relu"):
    return client.request(request_id, "run", task, candidate, language="python",
                          options={"trials": trials, "timing": timing},
                          limits={"timeout_s": timeout_s})


def _logs(scratch):
    """The candidates' logs in the server's private directory under `scratch`."""
    found = {}
    for path in glob.glob(os.path.join(scratch, "kforge-harness-*", "work", "kforge-*", "log.txt")):
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                found[path] = handle.read()
        except OSError:
            pass
    return found


def _kill(server):
    if server.process.poll() is None:
        server.process.kill()
        server.process.wait()


class ADuplicateTrialReportLeavesAStepInFlight(unittest.TestCase):
    """double_report writes its first trial's report twice in one write. Both pass
    _candidate_trial's check (next_trial is still 0 until a judge answers), so two judges
    go, two fills for "the next trial" follow, and two `go`s for trial 2 are sent, each a
    step of the child's in flight (turns.begin(proc)); the child answers one. After its
    trials the job asks for the device alone (its reference's timing, here none stored:
    an internal job's loop); DeviceTurns._advance waits for every key but the job itself,
    and its child's Proc is another key: that loop never starts. The job's wall-clock
    limit is suspended while it waits for its reference (_await_reference_timing), so
    nothing ends the wait. The victim (an honest ReLU of the same task, sent 4 s later)
    then waits too: every new step of any job is held while a loop waits. Secure: the
    victim is answered (with a pass), and the attacker within about its own limit."""

    ATTACKER_LIMIT_S = 15

    def test_the_server_keeps_answering(self):
        scratch = tempfile.mkdtemp(prefix="rt11-")
        server = client.Server(mode="fork", max_children=2, extra_env={"TMPDIR": scratch})
        responses = {}
        try:
            server.send(_timed("attacker", "redteam11/double_report", self.ATTACKER_LIMIT_S))
            time.sleep(4.0)
            server.send(_timed("victim", None, 60))
            started = time.monotonic()
            try:
                for response in server.receive(2, timeout=70):
                    responses[response["id"]] = response
            except TimeoutError:
                pass
            waited = time.monotonic() - started
            logs = _logs(scratch)
        finally:
            _kill(server)
            server.close()
        alive = [float(t) for text in logs.values() for t in re.findall(r"^ALIVE (\S+)$", text, re.M)]
        print(f"\n  answered after {waited:.1f} s: {sorted(responses)}; the attacker's child "
              f"(limit {self.ATTACKER_LIMIT_S} s) wrote ALIVE for "
              f"{(max(alive) - min(alive)) if alive else 0:.1f} s ({len(alive)} lines)", flush=True)
        for name, response in responses.items():
            show(name, "relu", response)
        self.assertIn("victim", responses, "the victim was never answered: the server's loops are stuck")
        self.assertEqual(responses["victim"]["status"], "pass", responses["victim"])
        self.assertIn("attacker", responses, "the attacker ran past its limit, unanswered")


if __name__ == "__main__":
    unittest.main()
