"""A fourth red team's candidates (tests/data/candidates/redteam4/), written against the
harness at 2cc4c0e assuming the candidate runs arbitrary code in its own process. Each
test starts its own fork-mode CPU server, prints what it returned, then asserts what
should happen: the cheat caught (fail, the right error_class), no gain (speedup <=
NO_GAIN), or an honest pass."""

import unittest

from tests import client
from tests.test_attacks import NO_GAIN
from tests.test_attacks_forged import show

TIMEOUT_S = 240


def run(name, task, language="cpp", options=None, task_format=None, max_children=2, **task_fields):
    server = client.Server(mode="fork", max_children=max_children)
    try:
        opts = {"trials": 2, "timing": {"enabled": True}}
        opts.update(options or {})
        req = client.request(name, "run", task, "redteam4/" + name, language=language,
                             task_format=task_format, options=opts, limits={"timeout_s": TIMEOUT_S},
                             **task_fields)
        response = server.ask(req, timeout=TIMEOUT_S + 200)[req["id"]]
    finally:
        server.close()
    show(name, task, response)
    lines = response.get("log_tail", "").splitlines()
    helper = [line for line in lines if line.startswith("helper: call")]
    print("\n".join(line for line in lines if not line.startswith("helper: call"))[-1500:])
    if helper:
        print(f"{len(helper)} helper lines in the log tail:", "; ".join(l.split("call ", 1)[1] for l in helper[-40:]))
    return response


class FreezeTest(unittest.TestCase):
    def test_work_done_while_the_freeze_is_held_off_by_sigcont_timers(self):
        # Every timed call does no work in its bracket; a thread computes the output
        # while the process's own SIGCONT timers keep freeze_tree from holding.
        response = run("freeze_stalled_by_timers", "redteam3/row_energy")
        if response["status"] == "pass":
            self.assertLessEqual(response["metrics"]["speedup"], NO_GAIN, response)
        else:
            self.assertEqual(response["error_class"], "cheat_detected", response)


if __name__ == "__main__":
    unittest.main()
