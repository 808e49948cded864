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
rings early, or launches work once it has rung, gains nothing: the host's answer holds
the device and its copies wait behind that hold (anticheat/answer.py); one that never
rings is copied when the server's `take` comes, with both messages in its bracket.

A ring says where the outputs are: in the slot (one byte, SLOT), or at offsets in the
child's arena (arena.py: ARENA, a count and that many offsets, little-endian), written
at once so that it arrives whole (at most PIPE_BUF bytes: MAX_OFFSETS outputs); a call
with more rings TABLE, a count and the offset of a table of that many int64 offsets the
child laid in its arena."""

import os
import select
import struct

SLOT = 1
ARENA = 2
TABLE = 3
MAX_OFFSETS = (select.PIPE_BUF - 5) // 8  # a pipe write of up to PIPE_BUF bytes is whole
# What a doorbell is read for at most: a few rings (a child rings once a call).
MAX_RINGS_BYTES = 16 << 10


class Unheard(Exception):
    """A ring that is none of the child's harness's messages (what its process wrote)."""


class Table:
    """A TABLE ring: `count` offsets, laid at `offset` in what the child was lent."""

    def __init__(self, count, offset):
        self.count, self.offset = count, offset


class Doorbell:
    """The task host's end: `fd` is the write end it lends, `read_fd` the end it watches
    (protocol.reporter.Channel.wait_for, between its commands)."""

    kind = "doorbell"
    nbytes = 0

    def __init__(self):
        self.read_fd, self.fd = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)

    def silence(self):
        """Drops every ring so far: what rings after this is the next call's."""
        self._drain()

    def heard(self):
        """The last ring since silence(): None (the outputs are in the slot), the offsets
        in the arena, or a Table of them; Unheard where the bytes are no ring (or more
        than a pipe holds: a child rings once a call)."""
        data, last, at = self._drain(), None, 0
        if len(data) > MAX_RINGS_BYTES:
            raise Unheard(f"its doorbell carried {len(data)} bytes, more rings than a call makes")
        while at < len(data):
            if data[at] == SLOT:
                last, at = None, at + 1
                continue
            if data[at] not in (ARENA, TABLE) or at + 5 > len(data):
                raise Unheard(f"its doorbell carried {bytes(data[at:at + 16])!r}, not a ring")
            count = struct.unpack_from("<I", data, at + 1)[0]
            if data[at] == TABLE:
                if at + 13 > len(data):
                    raise Unheard("its doorbell announced a table it did not place")
                last, at = Table(count, struct.unpack_from("<Q", data, at + 5)[0]), at + 13
                continue
            end = at + 5 + 8 * count
            if count > MAX_OFFSETS or end > len(data):
                raise Unheard(f"its doorbell announced {count} offsets in {len(data) - at - 5} bytes")
            last, at = list(struct.unpack_from(f"<{count}Q", data, at + 5)), end
        return last

    def _drain(self):
        """What the pipe holds, read until it is empty or a child's flood of it is plain
        (a little over MAX_RINGS_BYTES)."""
        data = bytearray()
        try:
            while len(data) <= MAX_RINGS_BYTES:
                chunk = os.read(self.read_fd, 65536)
                if not chunk:
                    break
                data += chunk
        except BlockingIOError:
            pass
        return data

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

    def ring(self, offsets=None, table=None):
        """The outputs are in the slot, or (`offsets`, at most MAX_OFFSETS) in the arena,
        or listed in a table of `table` = (count, offset) there."""
        if table is not None:
            message = struct.pack("<BIQ", TABLE, *table)
        elif offsets is None:
            message = bytes([SLOT])
        else:
            message = struct.pack(f"<BI{len(offsets)}Q", ARENA, len(offsets), *offsets)
        try:
            os.write(self.fd, message)
        except (BlockingIOError, BrokenPipeError):
            pass  # the host is gone, or its pipe is full of rings it has not heard
