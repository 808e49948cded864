"""The end of a timed call, rung by the child straight to the task host: a pipe whose
write end the child holds and whose read end the host watches.

Where a timed call's outputs cross by the child's copy into the output slot (a GPU, or a
CPU whose task host cannot read the child's memory), the call's bracket closes when the
task host has copied them out (`take`). Were that copy made only once the child's report
had gone to the server and the server's `take` to the host, the call's bracket would hold
two messages through two Python processes, time the reference's child spends idle and
its gap refunds to every candidate: a candidate's kernel launched after its report would
run in it unseen. So the child rings as soon as its outputs are in the slot and the
device is idle, and the host copies them at once (host.py's serve loop watches the bell
between commands); the server's `take` then returns that copy's moment. A candidate that
rings early has its slot copied early (the poison and the spot checks judge what was
there; a kernel of its own still running when the copy is queued holds the copy back);
one that never rings is copied when the server's `take` comes, with both messages in
its bracket."""

import os


class Doorbell:
    """The task host's end: `fd` is the write end it lends, `read_fd` the end it watches
    (protocol.reporter.Channel.wait_for, between its commands)."""

    kind = "doorbell"
    nbytes = 0

    def __init__(self):
        self.read_fd, self.fd = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)

    def silence(self):
        """Drops every ring so far: what rings after this is the next call's."""
        try:
            while os.read(self.read_fd, 4096):
                pass
        except BlockingIOError:
            pass

    def close(self):
        for fd in (self.read_fd, self.fd):
            try:
                os.close(fd)
            except OSError:
                pass


class BellRope:
    """The child's end: ring() after a timed call's outputs are in the slot."""

    def __init__(self, fd):
        self.fd = fd
        os.set_blocking(fd, False)

    def ring(self):
        try:
            os.write(self.fd, b"\x01")
        except (BlockingIOError, BrokenPipeError):
            pass  # rung already and not yet heard, or the host is gone
