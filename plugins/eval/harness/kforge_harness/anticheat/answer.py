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
slice ends first). So, as it hears a ring, the host queues

  - a probe: a one-element kernel, which the device runs once it leaves the child's
    work (an event alone does not wait for another context's kernels);
  - a hold: a kernel that spins for HOLD_CYCLES (about 100 microseconds), between two
    timing events, during which the child's kernels wait. The copies are queued behind
    it and copy with a kernel too (torch._foreach_copy_), not a copy engine's transfer,
    which runs beside another context's kernels.

The call's bracket then closes at: the copies done, plus the answer's CPU time, less the
hold's device time (`held`, measured by its events). So the hold's own length is no one's
time, and each case is charged as if the child had rung once its work was done:
  - an honest child on an idle device: the answer and the probe's few microseconds, in
    the reference's loop as in every candidate's;
  - a child whose kernel still ran at the ring: the probe waited for it, so its rest is
    in the bracket, and the answer after it;
  - a child that launched during the answer: its kernel runs after the hold, and the
    copies either wait for it (it is in the bracket) or read what was there before it
    (stale outputs, the previous call's: a repeat, which is always checked);
  - an answer longer than the hold: its excess is charged twice, once as it ran beside
    whatever the child did then, once as the bracket's, so that work in that excess gains
    nothing (an honest call pays it too; it is rare, and the same in both loops).
What this rests on is the device's time slicing: a time slice (milliseconds) shorter
than the hold would let the child's work in during it, and count it as held; under MPS,
whose clients' kernels run at once, the probe and the hold hold nothing."""

HOLD_CYCLES = 200_000  # torch.cuda._sleep's cycles: about 100 microseconds at 2 GHz


class AnswerHold:
    """One task host's probe and hold (its answers come one at a time)."""

    def __init__(self, device, torch):
        module = device.module(torch)
        self._events = [module.Event(enable_timing=True) for _ in range(2)]
        self._counter = torch.zeros(1, device=device.name)
        self._sleep = getattr(module, "_sleep", None)  # torch.cuda._sleep(cycles): a spin kernel

    def begin(self):
        """Queued as the host hears a ring, before it reads it."""
        probed, held = self._events
        self._counter.add_(1)
        probed.record()
        if self._sleep is not None:
            self._sleep(HOLD_CYCLES)
        held.record()

    def charge(self, answered):
        """Seconds added to the moment the copies were done (after the device was
        synchronised): `answered`, the host's seconds from hearing the ring to the copies
        queued, less the hold's seconds on the device."""
        probed, held = self._events
        return answered - probed.elapsed_time(held) / 1e3
