"""docs/extending.md's recipe 5, done: a new anti-cheat check, added to a copy of this
harness exactly as the recipe says (a module in anticheat/, its line in the registry, its
calls in the task host, HARNESS_VERSION), then run through the real server.

The check, "signs": on its trials the reference's floating outputs show which of them are
never negative (ReLU, softmax, a norm) or never positive; every timed call's outputs are
then held to that sign, checked or not. A candidate that does the work on the first calls
only and then hands back something cheaper (its input, say) is caught on the first such
call, where the spot checks catch it with a probability. The harness itself does not have
this check: the copy shows how one is added, and that this one catches what it says and
passes honest candidates.

RECIPE holds the recipe's code; the doc quotes it (tests/doc_snippets_test.py keeps the two
the same), so a step that no longer fits the harness fails here first."""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

from . import client

# Step 1: the check, a module of its own in kforge_harness/anticheat/.
SIGNS_MODULE = '''\
"""Signs: an output the reference never makes negative (or never positive) stays so.

The task host observes the reference's outputs on the trials (observe) and holds every
timed call's outputs to the signs they kept (verdict), whether the call is spot-checked or
not. A candidate that hands back something cheaper than the work on some calls (its
input, a stale buffer) is caught on the first such call."""

import torch

from kforge_harness import protocol
from kforge_harness.anticheat.buffers import fail

# An honest kernel rounds differently from the reference: a value below zero by less than
# this share of the output's largest magnitude on the trials is no sign.
SLACK = 1e-2


def observe(outputs, seen):
    """Per output: (sign, scale), sign 1 for never negative, -1 for never positive, 0 for
    either, scale its largest magnitude; combined with what was `seen` before (None)."""
    now = []
    for output in outputs:
        if not isinstance(output, torch.Tensor) or not output.is_floating_point() or output.numel() == 0:
            now.append((0, 0.0))
            continue
        low, high = float(output.min()), float(output.max())
        sign = 1 if low >= 0 else -1 if high <= 0 else 0
        now.append((sign, max(abs(low), abs(high))))
    if seen is None:
        return now
    return [(a if a == b else 0, max(s, t)) for (a, s), (b, t) in zip(seen, now)]


def verdict(label, views, seen):
    """cheat_detected for the first output on the wrong side of zero, else None."""
    for position, (view, (sign, scale)) in enumerate(zip(views, seen or ())):
        if sign == 0 or not isinstance(view, torch.Tensor) or not view.is_floating_point():
            continue
        worst = float(view.min()) if sign > 0 else -float(view.max())
        if worst < -SLACK * scale:
            side = "negative" if sign > 0 else "positive"
            return fail(protocol.CHEAT_DETECTED,
                        f"{label}: output #{position} holds {side} values (down to {abs(worst):.3g} "
                        f"beyond zero) where the reference's never are: the call did not do the work")
    return None
'''

# Step 2: its line in the registry, kforge_harness/anticheat/__init__.py's CHECKS.
CHECK_ENTRY = '''\
    Check("signs", "task host",
          "the sign each floating output of the reference keeps on the trials, and every "
          "timed call's outputs",
          "cheat_detected for an output on the wrong side of zero (beyond 1% of its scale)",
          "signs.py"),
'''

# Step 3: the task host observes and checks (kforge_harness/reference/host.py): each pair
# is a line of the file as it is and the lines that go after it.
HOST_EDITS = (
    ("from kforge_harness.anticheat import buffers, observe\n",
     "from kforge_harness.anticheat import signs\n"),
    ("        self.sampler = buffers.Sampler()  # which output elements the fingerprints read\n",
     "        self.signs = None  # per output: the sign the reference's keeps (anticheat/signs.py)\n"),
    ('        record = self._outputs(request["seed"], request.get("transform"), session=session)\n',
     '        session.signs = signs.observe(record["outputs"], session.signs)\n'),
    ("        verdict = buffers.completeness_verdict(label, outputs)\n",
     "        if verdict is None:\n"
     "            verdict = signs.verdict(label, outputs, session.signs)\n"),
)

HONEST_RELU = "python_relu"
# Does the work on the trials and the first timed calls, then hands back its input.
LAZY_RELU = '''\
import torch


class ModelNew(torch.nn.Module):
    def __init__(self, *args):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return torch.relu(x) if self.calls <= 4 else x.clone()
'''


def insert_after(text, anchor, addition, where):
    if text.count(anchor) != 1:
        raise AssertionError(f"docs/extending.md recipe 5 no longer fits {where}: the line {anchor.strip()!r} "
                             f"is there {text.count(anchor)} times, not once")
    return text.replace(anchor, anchor + addition)


def apply_recipe(harness):
    """The recipe's steps on the harness copy at `harness`; the new HARNESS_VERSION."""
    package = os.path.join(harness, "kforge_harness")
    with open(os.path.join(package, "anticheat", "signs.py"), "w", encoding="utf-8") as handle:
        handle.write(SIGNS_MODULE)
    registry = os.path.join(package, "anticheat", "__init__.py")
    with open(registry, encoding="utf-8") as handle:
        text = handle.read()
    if not text.rstrip().endswith(")"):
        raise AssertionError("docs/extending.md recipe 5 no longer fits anticheat/__init__.py: CHECKS is not its end")
    text = text.rstrip()[:-1] + CHECK_ENTRY + ")\n"
    with open(registry, "w", encoding="utf-8") as handle:
        handle.write(text)
    host = os.path.join(package, "reference", "host.py")
    with open(host, encoding="utf-8") as handle:
        text = handle.read()
    for anchor, addition in HOST_EDITS:
        text = insert_after(text, anchor, addition, "reference/host.py")
    with open(host, "w", encoding="utf-8") as handle:
        handle.write(text)
    # Step 4: the verdicts of the old harness are not this one's (the plugin's version
    # carries it, and the verdict cache forgets).
    version_file = os.path.join(package, "__init__.py")
    with open(version_file, encoding="utf-8") as handle:
        text = handle.read()
    found = re.search(r'^HARNESS_VERSION = "(\d+)"$', text, re.M)
    if not found:
        raise AssertionError("docs/extending.md recipe 5 no longer fits kforge_harness/__init__.py: no HARNESS_VERSION")
    version = str(int(found.group(1)) + 1)
    with open(version_file, "w", encoding="utf-8") as handle:
        handle.write(text[:found.start(1)] + version + text[found.end(1):])
    return version


def timed(request_id, candidate_code, task="relu", spot_check_rate=0.0):
    """A timed run of `candidate_code` (None: the reference) with no spot checks, so that
    only the new check can catch what skips the work."""
    req = client.request(request_id, "run", task, None, language="python",
                         options={"timing": {"enabled": True, "warmup": 1, "trials": 5,
                                             "spot_check_rate": spot_check_rate}})
    req["candidate"]["code"] = candidate_code
    return req


class NewCheckTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="kforge-test-extending-")
        cls.harness = os.path.join(cls.work, "harness")
        shutil.copytree(client.HARNESS_DIR, cls.harness, ignore=shutil.ignore_patterns("__pycache__", "data"))
        cls.version = apply_recipe(cls.harness)
        cls.cache = os.path.join(cls.work, "cpp-cache")
        env = {"KFORGE_CPP_CACHE": cls.cache}
        requests = [timed("lazy", LAZY_RELU), timed("honest", client.candidate_code(HONEST_RELU)),
                    timed("reference-softmax", None, task="softmax"),
                    timed("reference-linear", None, task="linear")]
        # From inside the copy: `python -m` puts the working directory first on the path.
        server = client.Server(mode="fork", max_children=2, harness_dir=cls.harness, extra_env=env, cwd=cls.harness)
        try:
            cls.ready = server.ready
            cls.responses = server.ask(*requests, timeout=600)
        finally:
            server.close()
        # The same lazy candidate on the harness as it is.
        server = client.Server(mode="fork", max_children=1, extra_env=env)
        try:
            cls.unchanged = server.ask(timed("lazy", LAZY_RELU), timeout=600)["lazy"]
        finally:
            server.close()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, ignore_errors=True)

    def test_the_check_catches_the_call_that_skipped_the_work(self):
        response = self.responses["lazy"]
        self.assertEqual((response["status"], response["error_class"]), ("fail", "cheat_detected"), response)
        self.assertRegex(response["message"], r"call \d+ .*: output #0 holds negative values \(down to [\d.e+-]+ "
                                              r"beyond zero\) where the reference's never are")

    def test_without_it_the_harness_passes_that_candidate_when_it_draws_no_spot_check(self):
        self.assertEqual(self.unchanged["status"], "pass", self.unchanged)

    def test_honest_candidates_pass_whatever_the_signs_of_their_outputs(self):
        for name in ("honest", "reference-softmax", "reference-linear"):
            with self.subTest(candidate=name):
                self.assertEqual(self.responses[name]["status"], "pass", self.responses[name])

    def test_the_server_says_its_new_version(self):
        self.assertEqual(self.ready["harness_version"].split("+")[0], self.version, self.ready)

    def test_the_registry_lists_it_and_its_own_test_still_holds(self):
        done = subprocess.run([sys.executable, "-m", "unittest", "tests.test_anticheat"], cwd=self.harness,
                              capture_output=True, text=True, timeout=300)
        self.assertEqual(done.returncode, 0, done.stderr)
        listed = subprocess.run([sys.executable, "-c", "from kforge_harness import anticheat; "
                                 "print([c.name for c in anticheat.CHECKS])"],
                                cwd=self.harness, capture_output=True, text=True, timeout=60)
        self.assertIn("'signs'", listed.stdout, listed.stderr)


if __name__ == "__main__":
    unittest.main()
