"""Whose turn it is on the device: a timing loop has it alone, everything else shares it.

A job's correctness work (its task host's plan, the trials, its child's set-up) may run
beside other jobs' on the same device; a timing loop may not, or the calls it times
would share the device with whatever its neighbours run. Holding the device alone for a
whole timed job (from admission to verdict) made every timed job's set-up and trials
serial with every other's timing; here only the loops are.

The unit is a step: a command the server sends to a task host or a candidate's child,
from the moment it is sent to its answer (a child's set-up ends at its `ready`, a trial
at its `trial` report), counted under whoever does the work until it is answered or the
process doing it is gone: a host command under its job, a child's work under the child,
a host's start under its task entry. A job that ends leaves its steps in flight counted:
the work goes on until the host answers or the child dies. A loop starts once nothing
but its own job has a step in flight; while a loop waits or runs, other jobs' new steps
are held, in order, so that a stream of trials cannot starve it; they go once no loop
waits. A job's own steps always go while its loop runs: the loop is made of them.

The server pauses the neighbours' candidate processes while a loop runs (an idle child
that runs threads of its own would otherwise run them beside the loop), and suspends
their wall-clock limits meanwhile: that is the server's part, through `on_alone` and
`on_shared`."""


class DeviceTurns:
    def __init__(self, on_alone, on_shared):
        # on_alone(owner): a loop got the device (pause the others); on_shared(owner): it
        # gave it back (continue them).
        self.on_alone = on_alone
        self.on_shared = on_shared
        self.owner = None
        self.in_flight = {}  # job -> its steps sent and not answered yet
        self.waiting = []  # (job, start, own keys) for the device alone, in order of asking
        self.held = []  # (job, send): steps waiting for the loops to end

    def step(self, job, send):
        """Runs send() now (and counts it as in flight until done(job)), or once no loop
        waits or runs. True when it went now."""
        if self.owner is job or (self.owner is None and not self.waiting):
            self._go(job, send)
            return True
        self.held.append((job, send))
        return False

    def done(self, job):
        """One of the steps counted under `job` was answered."""
        left = self.in_flight.get(job, 0) - 1
        if left > 0:
            self.in_flight[job] = left
        else:
            self.in_flight.pop(job, None)
        self._advance()

    def alone(self, job, start, own=()):
        """Calls start() once `job` has the device alone (at once if it has it already);
        release(job) gives it back. Steps counted under `own` (its child) are its own:
        they do not hold its loop back."""
        if self.owner is job:
            start()
            return
        self.waiting.append((job, start, tuple(own)))
        self._advance()

    def release(self, job):
        if self.owner is job:
            self.owner = None
            self.on_shared(job)
            self._advance()

    def forget(self, job):
        """`job` ended: its held steps and its wait for the device are dropped, the device
        given back if it had it. Its steps in flight stay counted (gone())."""
        self.waiting = [w for w in self.waiting if w[0] is not job]
        self.held = [(j, s) for j, s in self.held if j is not job]
        if self.owner is job:
            self.release(job)
        else:
            self._advance()

    def gone(self, key):
        """The process doing the steps counted under `key` is gone: they are over."""
        if self.in_flight.pop(key, None) is not None:
            self._advance()

    def begin(self, job):
        """A step that goes at once: what follows a step just answered (the trial a fill
        was for, the set-up of the child a session was opened for), so that its inputs
        and descriptors are not held. It counts as in flight like any other."""
        self.in_flight[job] = self.in_flight.get(job, 0) + 1

    def _go(self, job, send):
        self.begin(job)
        send()

    def _advance(self):
        while self.owner is None:
            if self.waiting:
                job, start, own = self.waiting[0]
                if any(other is not job and other not in own for other in self.in_flight):
                    return  # the steps in flight end first
                self.waiting.pop(0)
                self.owner = job
                self.on_alone(job)
                start()
                return
            if not self.held:
                return
            job, send = self.held.pop(0)
            self._go(job, send)
