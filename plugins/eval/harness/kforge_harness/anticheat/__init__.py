"""Every anti-cheat check of the harness, in one registry: what it observes, where, and
how it judges. The checks live in this folder; the task host, the server and the child
call them. A new check is a function here and a line below (and the tests in
tests/test_attacks*.py that show it catching its class). README.md's "Threat model" is
written from this table.

L1's static rules (rules/default.yaml) are a fast first filter and decide no pass: every
check below holds whatever the candidate's code does in its own process."""

import dataclasses


@dataclasses.dataclass(frozen=True)
class Check:
    name: str
    where: str  # the process that observes: "task host", "server", "child"
    observes: str
    judges: str
    module: str  # where it lives in this folder


CHECKS = (
    Check("inputs", "task host",
          "the digest of every input the host filled, after each trial and timed call (a "
          "checked call's; a kernelbenchx unit's: every argument of its calls)",
          "cheat_detected when an input changed that the reference's forward leaves alone "
          "(an argument the reference's call changes in place is compared as a result)",
          "buffers.py"),
    Check("completeness", "task host",
          "poison (0xFF) the host wrote into the output buffer before the call",
          "cheat_detected when floating outputs still hold it after the child said done",
          "buffers.py"),
    Check("repeats", "task host",
          "the digest of each call's outputs against every earlier call's",
          "a repeat (a memo, a cache, a constant) is always compared with the reference",
          "buffers.py"),
    Check("spot checks", "task host",
          "each timed call, with probability spot_check_rate drawn after it: its outputs "
          "copied chunk by chunk and compared with the reference's forward on its inputs "
          "(a kernelbenchx unit: the reference function over copies of its calls' arguments)",
          "cheat_detected on a mismatch; a skipped share f of n calls escapes with "
          "probability (1 - rate)^(f n)",
          "../timing/timing_plan.py (the draw), ../reference/host.py (the comparison)"),
    Check("ring answers", "task host",
          "the device as the host hears a timed call's ring: a probe kernel (waits for the "
          "child's running kernels) and a hold kernel, the copies queued behind them",
          "the bracket closes at the copies done plus the answer's CPU time less the hold's "
          "device time: work of the child's beside the answer is in the call's time",
          "answer.py"),
    Check("gap", "server",
          "the server's bracket of each call (its own clock; the child stopped between "
          "calls) less the child's event time, against the same on the reference's loop",
          "measured again once, then cheat_detected beyond the bound",
          "timing.py"),
    Check("tail", "child (bounded by the reference's child)",
          "how long the whole device ran on after the call's own stream was done",
          "measured again once, then cheat_detected beyond the reference's tail",
          "timing.py"),
    Check("plain outputs", "child",
          "the exact type of each output before it is copied into the buffer (a "
          "kernelbenchx unit's results read through their containers' own methods)",
          "cheat_detected for a subclass (it runs its own code when read)",
          "../candidate/candidate.py"),
    Check("fixed calls", "task host",
          "a kernelbenchx test's calls of the function, recorded at two seeds",
          "a call whose arguments are the same at both is never timed (the task file's "
          "constants: a memo of them would be correct and free); a test left with none "
          "is not timed (flag timing_refused)",
          "../tasks/kbx_calls.py"),
    Check("runtime guards", "child",
          "an audit hook (exec/compile of strings, frames, gc, processes, ctypes, "
          "/proc/self/mem, rewritten functions) and torch compute in a kernel's forward",
          "cheat_detected for what the candidate's own code was refused or ran",
          "guards.py"),
    Check("device memory", "server",
          "the device memory of the candidate's processes, per process, from the driver",
          "out_of_memory (stopped) beyond the share it was admitted with",
          "memory.py"),
)
