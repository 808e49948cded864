"""redteam11: attacks on the device turn-taking of the harness server at 8fa5a59
(server/turns.py, DeviceTurns, and how server.py holds, pauses and continues jobs),
through a real server on the CPU. Each test asserts the SECURE outcome: a test that fails
is a hole. Run them one by one (`-m unittest tests.test_attacks_redteam11.Class.test`):
the VM is noisy, and the suite's servers must not run beside another suite's."""

import glob
import os
import re
import shutil
import tempfile
import threading
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
    step of the child's in flight (turns.begin(proc)); the child answers one (trial 1 is
    never run nor judged). Its reference was timed before it opened its session
    (_open_when_reference_timed), so after its trials _start_timing finds the record and
    asks for its own loop at once, not frozen (_start_loop), its wall-clock limit
    suspended. DeviceTurns._advance waits for every key in flight but the job itself, and
    its child's Proc is another key: the loop never starts, and nothing ends the wait.
    The victim (an honest ReLU of the same task, sent 4 s later) waits too: every new step
    of any job is held while a loop waits. Secure: the victim is answered (with a pass),
    and the attacker within about its own limit.
    Seen at 8fa5a59 (server debug prints, not committed: in_flight at _start_timing was
    {attacker's child Proc: 1, attacker: 1}, then _start_loop(attacker, "timing"), never
    started): no response in 70 s; the attacker's child (limit 15 s) wrote ALIVE for
    73.0 s (74 lines), running the whole time. Spawn mode with the victim a softmax job
    (another task, its own task host): the same, no response in 70 s, ALIVE for 73.0 s."""

    ATTACKER_LIMIT_S = 15

    def test_the_server_keeps_answering(self):
        self._keeps_answering("fork", "relu")

    def test_the_server_keeps_answering_spawn_another_task(self):
        """The same in spawn mode, the victim a job of another task (softmax): the turns
        are the server's, every task waits."""
        self._keeps_answering("spawn", "softmax")

    def _keeps_answering(self, mode, victim_task):
        scratch = tempfile.mkdtemp(prefix="rt11-")
        server = client.Server(mode=mode, max_children=2, extra_env={"TMPDIR": scratch})
        responses = {}
        try:
            server.send(_timed("attacker", "redteam11/double_report", self.ATTACKER_LIMIT_S))
            time.sleep(6.0 if mode == "spawn" else 4.0)
            server.send(_timed("victim", None, 60, task=victim_task))
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
            shutil.rmtree(scratch, ignore_errors=True)  # a killed server leaves its directory
        alive = [float(t) for text in logs.values() for t in re.findall(r"^ALIVE (\S+)$", text, re.M)]
        print(f"\n  {mode}: answered after {waited:.1f} s: {sorted(responses)}; the attacker's child "
              f"(limit {self.ATTACKER_LIMIT_S} s) wrote ALIVE for "
              f"{(max(alive) - min(alive)) if alive else 0:.1f} s ({len(alive)} lines)", flush=True)
        for name, response in responses.items():
            show(name, victim_task if name == "victim" else "relu", response)
        self.assertIn("victim", responses, "the victim was never answered: the server's loops are stuck")
        self.assertEqual(responses["victim"]["status"], "pass", responses["victim"])
        self.assertIn("attacker", responses, "the attacker ran past its limit, unanswered")


class ADuplicateReportIsNotTheHarnesssFailure(unittest.TestCase):
    """double_last_report reports its next-to-last trial twice (one write): two judges,
    the second moves next_trial past the last trial, which is never run nor judged; the
    job goes on to its timing, and the last trial's fill, answered after, makes
    _trial_filled read job.trials[5] of 5: IndexError in the server, caught, and the job is
    decided as harness_error ("the harness failed"). After the marker whatever goes wrong
    in a child is the candidate's: a candidate must not be able to make its verdict the
    harness's (kforge would not count it against the candidate, or would run it again).
    Secure: the job is not a harness_error (a failure of the candidate's, or a pass).
    Seen at 8fa5a59: status=error error_class=harness_error, "the harness failed: ...
    _trial_filled ... seed, _ = job.trials[job.next_trial] ... IndexError: list index out
    of range". In a side run untimed (timing disabled, not a test here): status pass,
    metrics trials=5, though the fifth trial was never run: the fourth was judged twice."""

    def test_the_verdict_is_not_the_harnesss(self):
        server = client.Server(mode="fork", max_children=1)
        try:
            response = server.ask(_timed("late", "redteam11/double_last_report", 60), timeout=110)["late"]
        finally:
            server.close()
        show("double_last_report", "relu", response)
        self.assertNotEqual(response.get("error_class"), "harness_error", response)


def _cgroup_root(server_pid):
    """The server's directory of candidate cgroups (freezer.Freezer.open)."""
    from kforge_harness.server import freezer
    mount, own = freezer._cgroup2_mount(), freezer._own_cgroup()
    return os.path.join(mount, own.lstrip("/"), f"kforge-{server_pid}")


class _CgroupSampler(threading.Thread):
    """Samples every candidate cgroup of a server every PERIOD_S: (time, freeze asked,
    frozen, CPU used in µs), per group."""

    PERIOD_S = 0.01

    def __init__(self, root):
        super().__init__(daemon=True)
        self.root, self.samples, self.stop = root, {}, threading.Event()

    def run(self):
        while not self.stop.is_set():
            for path in glob.glob(os.path.join(self.root, "child-*")):
                try:
                    with open(os.path.join(path, "cgroup.freeze")) as handle:
                        asked = handle.read().strip() == "1"
                    with open(os.path.join(path, "cgroup.events")) as handle:
                        frozen = "frozen 1" in handle.read()
                    with open(os.path.join(path, "cpu.stat")) as handle:
                        used = int(re.search(r"usage_usec (\d+)", handle.read()).group(1))
                except (OSError, AttributeError):
                    continue
                self.samples.setdefault(os.path.basename(path), []).append(
                    (time.monotonic(), asked, frozen, used))
            time.sleep(self.PERIOD_S)

    def episodes(self, name):
        """Each stretch of group `name` asked to be frozen: (asked at, frozen at or None,
        asked until, CPU µs used while asked)."""
        found, current = [], None
        for t, asked, frozen, used in self.samples.get(name, []):
            if asked and current is None:
                current = [t, None, t, used, used]
            if asked:
                current[2], current[4] = t, used
                if frozen and current[1] is None:
                    current[1] = t
            elif current is not None:
                found.append((current[0], current[1], current[2], current[4] - current[3]))
                current = None
        if current is not None:
            found.append((current[0], current[1], current[2], current[4] - current[3]))
        return found

    def worked_while_asked_frozen(self, name):
        """(start, end, CPU µs) of each stretch between two samples of group `name`, both
        asking for a freeze, in which its processes used CPU."""
        found, samples = [], self.samples.get(name, [])
        for (t0, a0, _, u0), (t1, a1, _, u1) in zip(samples, samples[1:]):
            if a0 and a1 and u1 > u0:
                found.append((t0, t1, u1 - u0))
        return found


class APauseDoesNotWaitForTheFreeze(unittest.TestCase):
    """A decided neighbour (kernel_linger, a `compile` request) works after its verdict in
    two threads, each in long system calls (an mmap with MAP_POPULATE of 1 GB: seconds in
    the kernel). _pause_neighbours asks its cgroup to freeze (start_freeze) and the loop
    starts at once; a task freezes only when it leaves the kernel, so its work goes on
    beside the honest job's loops (its reference's, then its own) until the call returns.
    The server's own freeze between timed calls waits for the group (frozen_within, with
    FREEZE_PATIENCE_S, then calls it the candidate's cheat); the pause of a neighbour does
    not look. Sampled from outside: the neighbour's cgroup (cgroup.freeze, cgroup.events,
    cpu.stat) every 10 ms. Secure: while the server asks the neighbour's group to be frozen,
    it uses no CPU, and no call of the honest job's loop runs while it works.
    Seen at 8fa5a59: (1) 1665 ms of the neighbour's CPU in 358 sampled stretches while it
    was asked to be frozen (29004.472..29014.538, its reference's loop and the start of
    its own), 1 of 60 stamped loop calls inside; honest pass at 0.5603x. (2) paused
    29067.801..29074.308 (the reference's loop): frozen after 0.234 s, 113 ms of CPU used
    meanwhile; paused 29074.563..29081.235 (the honest loop): frozen after 0.719 s, 332 ms
    used; 5 of 60 stamped loop calls (every 25th call) inside; honest pass at 0.8123x.
    Closed: a loop starts once the neighbours stopped for it are seen frozen
    (_advance_pause), and one not frozen within a freeze's patience is ended; the work
    while the freeze lands is before the loop."""

    def test_no_neighbour_work_while_paused(self):
        how = client.machine_freezer()
        if how != "cgroup v2":
            self.skipTest(f"no cgroup v2 freezer here (freezer: {how}); the test samples the "
                          "neighbour's cgroup")
        server = client.Server(mode="fork", max_children=2)
        sampler = _CgroupSampler(_cgroup_root(server.process.pid))
        sampler.start()
        try:
            lingering = client.request("linger", "compile", "relu", "redteam11/kernel_linger",
                                       language="python", limits={"timeout_s": 120})
            honest = _timed("honest", "redteam10/loop_stamps", 120,
                            timing={"enabled": True, "warmup": 3, "trials": 1500, "baseline": "eager"})
            server.send(lingering)
            time.sleep(3.0)  # its verdict is decided and its threads are in the kernel
            server.send(honest)
            responses = {r["id"]: r for r in server.receive(2, timeout=110)}
        finally:
            sampler.stop.set()
            server.close()
        linger, honest = responses["linger"], responses["honest"]
        show("kernel_linger (compile)", "relu", linger)
        show("loop_stamps", "relu", honest)
        self.assertEqual(honest["status"], "pass", honest)
        calls = [float(t) for n, t in re.findall(r"^STAMP (\S+) (\S+)$", honest["log_tail"], re.M)
                 if float(n) > 2]
        # The neighbour's group: the one that used the most CPU (its threads' kernel work).
        groups = {name: s[-1][3] - s[0][3] for name, s in sampler.samples.items() if s}
        neighbour = max(groups, key=groups.get)
        stretches = sampler.worked_while_asked_frozen(neighbour)
        used_ms = sum(u for _, _, u in stretches) / 1e3
        beside = [t for t in calls if any(a <= t <= b for a, b, _ in stretches)]
        for asked, frozen, until, used in sampler.episodes(neighbour):
            print(f"  paused {asked:.3f}..{until:.3f}: frozen "
                  + (f"after {frozen - asked:.3f} s" if frozen is not None else "never")
                  + f", {used / 1e3:.0f} ms of CPU used meanwhile", flush=True)
        print(f"  neighbour group {neighbour}: {used_ms:.0f} ms of CPU in {len(stretches)} sampled "
              f"stretches while asked to be frozen"
              + (f" ({stretches[0][0]:.3f}..{stretches[-1][1]:.3f})" if stretches else "")
              + f"; honest loop calls stamped: {len(calls)}"
              + (f" ({calls[0]:.3f}..{calls[-1]:.3f})" if calls else "")
              + f", of them while the paused neighbour worked: {len(beside)}", flush=True)
        self.assertEqual(beside, [], "loop calls ran beside a paused neighbour's kernel work")
        # It may work while its freeze lands (the next loop waits for that); not while one
        # of the honest job's loops runs: between two of its calls less than 0.25 s apart
        # (loops are seconds apart: the stamps may span several of them).
        inside = [(t0, t1) for t0, t1 in zip(calls, calls[1:]) if t1 - t0 < 0.25]
        during = sum(u for a, b, u in stretches if any(a <= t1 and b >= t0 for t0, t1 in inside)) / 1e3
        self.assertLess(during, 50.0, "a paused neighbour kept working through the loop")


if __name__ == "__main__":
    unittest.main()
