"""The task host's answer to a timed call's ring, held against work of the child's that
would run beside it.

When the child rings (handover/doorbell.py), the task host reads the ring, finds the
outputs and queues their copies: tens of microseconds of its own CPU time inside the
call's bracket, which an honest child waits for once its device work is done, and which
the reference's gap refunds to every candidate. A child whose device work runs during
that answer has the answer's time for free. Two ways were found (red teams 21 and 22):
ringing before its kernel ends (1.34x-1.80x on a 0.13 ms ReLU), and ringing before it
launches anything, then launching once the host has read the ring.

Devices time-slice the contexts of different processes: a kernel of the host's waits
while the child's runs, and the child's waits while the host's runs (unless a time
slice ends first). So, as it hears a ring, the host queues between timing events

  - a probe: a one-element kernel, which the device runs once it leaves the child's
    work; the events around it say how long the device was still busy (`waited`);
  - a hold: a kernel that spins for about twice the host's recent answers (`held`),
    during which the child's kernels wait; the copies are queued behind it and copy with
    a kernel too (torch._foreach_copy_), not a copy engine, which runs beside another
    context's kernels.

What of the answer the device was busy elsewhere for, and what of it outlasted the hold,
is added to the call's bracket: min(answer, waited + max(0, answer - waited - held)). An
honest call on an idle device is charged the probe's few microseconds, in the reference's
loop as in every candidate's. A kernel the child launches during the answer runs after
the hold, beside the copies queued behind it: either the copies wait for it (it is then
in the bracket) or they read what was there before it (stale outputs: the previous
call's, a repeat, which is always checked). What this rests on is the device's time
slicing; a hold longer than a time slice (they are milliseconds; the hold is at most
HOLD_MAX_US) would let the child's work in during it, counted as held."""

import collections
import statistics

# The hold, in microseconds: twice the median of the last answers, within these bounds.
HOLD_MIN_US = 20.0
HOLD_MAX_US = 2000.0
HOLD_FIRST_US = 100.0
ANSWERS_KEPT = 32


class AnswerHold:
    """One task host's probe and hold (its answers come one at a time)."""

    def __init__(self, device, torch):
        module = device.module(torch)
        self._events = [module.Event(enable_timing=True) for _ in range(3)]
        self._counter = torch.zeros(1, device=device.name)
        self._sleep = getattr(module, "_sleep", None)  # torch.cuda._sleep(cycles): a spin kernel
        self._cycles_per_us = None
        self._answers = collections.deque(maxlen=ANSWERS_KEPT)

    def begin(self):
        """Queued as the host hears a ring, before it reads it."""
        start, probed, held = self._events
        start.record()
        self._counter.add_(1)
        probed.record()
        if self._sleep is not None:
            self._sleep(self._hold_cycles())
        held.record()

    def charge(self, answered):
        """Seconds added to the moment the copies were done (after the device was
        synchronised): `answered`, the host's seconds from hearing the ring to the copies
        queued, less what the device held for it."""
        start, probed, held = self._events
        waited = start.elapsed_time(probed) / 1e3
        covered = probed.elapsed_time(held) / 1e3
        self._answers.append(answered)
        return min(answered, waited + max(0.0, answered - waited - covered))

    def _hold_cycles(self):
        if self._cycles_per_us is None:
            self._cycles_per_us = self._calibrate()
        hold_us = (2e6 * statistics.median(self._answers)) if self._answers else HOLD_FIRST_US
        return int(min(HOLD_MAX_US, max(HOLD_MIN_US, hold_us)) * self._cycles_per_us)

    def _calibrate(self):
        """The spin kernel's cycles per microsecond on this device, measured once."""
        start, _, end = self._events
        cycles = 1_000_000
        start.record()
        self._sleep(cycles)
        end.record()
        end.synchronize()
        return cycles / max(start.elapsed_time(end) * 1e3, 1.0)
