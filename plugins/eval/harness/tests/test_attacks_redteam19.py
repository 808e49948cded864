"""redteam19 (this session's own): what a candidate learns of a timed call before its
bracket. The call's numbers (a list of 1000 drawn with x, relu_kscales-like) went with
its preparation for a while (host.py values_at_prepare, to keep their decoding out of
the bracket): known there, whatever a forward computes from them alone could be computed
before the clock runs, timed only as the preparation, within the allowance its timing
gives load. They go with the call since. Each test asserts the SECURE outcome.

Seen on the shared 2-core VM: with the numbers in the preparation, numbers_ahead met
them there ("RT19 ahead") and passed at 1.0 (charged 0.24 ms: the clock's noise on a
0.31 ms forward hid any gain either way, so no test here asserts on its speedup); since,
it meets them in the bracket only, 1.0 (charged 0.34 ms)."""

import unittest

from tests import client
from tests.test_attacks_forged import show

TASK = "redteam19/outer_of_numbers"


def _ask(server, candidate):
    request = client.request(candidate.replace("/", "_"), "run", TASK, candidate, language="python",
                             limits={"timeout_s": 300},
                             options={"trials": 2, "timing": {"enabled": True}})
    response = server.ask(request, timeout=900)[candidate.replace("/", "_")]
    show(candidate, TASK, response)
    return response


class NumbersBeforeTheBracketTest(client.SharedServerTest):
    MAX_CHILDREN = 1

    def test_the_calls_numbers_are_never_in_its_preparation(self):
        response = _ask(self.server, "redteam19/numbers_ahead")
        log = response.get("log_tail", "")
        said = [line for line in log.splitlines() if line.startswith("RT19 ")]
        print("\n".join(said))
        self.assertIn("RT19 in_bracket 1000", said, log)  # the probe works
        self.assertNotIn("RT19 ahead 1000", said, log)


if __name__ == "__main__":
    unittest.main()
