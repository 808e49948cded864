"""A seventh red team's candidates (tests/data/candidates/redteam7/), written against the
harness at 8782e2f: work deferred past the call's clock into the hand-over without
replacing harness code (timing.Clock.settle), and L1's harness-import rule reached
around. Each test starts its own fork-mode CPU server, prints what it returned, then
asserts what should happen. Holes are marked expectedFailure with what the server
returned on the 2-core VM.

Run one test at a time, by name."""

import unittest

from tests import client
from tests.test_attacks_redteam6 import HUGE, LARGER, TIMEOUT_S, _Asserts
from tests.test_attacks_forged import show


def run(name, task, language="python", options=None, **task_fields):
    opts = {"trials": 2, "timing": {"enabled": True}}
    opts.update(options or {})
    server = client.Server(mode="fork", max_children=2)
    try:
        req = client.request(name, "run", task, "redteam7/" + name, language=language,
                             options=opts, limits={"timeout_s": TIMEOUT_S}, **task_fields)
        response = server.ask(req, timeout=TIMEOUT_S + 200)[req["id"]]
    finally:
        server.close()
    show(name, task, response)
    print(response.get("log_tail", "")[-1500:], flush=True)
    return response


def check(name, task, language="python"):
    server = client.Server(mode="fork", max_children=1)
    try:
        req = client.request(name, "check", task, "redteam7/" + name, language=language)
        response = server.ask(req, timeout=300)[req["id"]]
    finally:
        server.close()
    print(f"\nL1 {name}: {response.get('status')} {response.get('error_class')}", flush=True)
    return response


class SettleTest(_Asserts):
    """Item 1: work left past the end event without replacing harness code."""

    def test_relu_done_by_a_dispatch_mode_in_the_hand_overs_copy(self):
        self.assert_no_gain(run("dispatch_mode_copy", "relu", sizes=HUGE))


class StaticCheckTest(_Asserts):
    """Item 5: the harness reached without an import statement L1 sees."""

    def test_the_harness_reached_through_sys_modules(self):
        self.assertEqual(check("handover_fused_unimported", "relu")["status"], "fail")

    def test_the_harness_reached_through_sys_modules_runs(self):
        self.assert_no_gain(run("handover_fused_unimported", "relu", sizes=HUGE))
