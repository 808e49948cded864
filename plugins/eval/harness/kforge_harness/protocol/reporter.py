"""A child's two channels to the server: JSON lines it sends (`send`) and JSON lines of
commands it reads (`command`), with file descriptors beside them where the channel is a
socket (the buffers a task host lends, handover.py).

What a child sends is data, never a verdict: the server decides what it means, and for
the candidate child it trusts nothing that child sends after the marker
{"candidate_code": "start"} (from then on, code it does not control runs there)."""

import collections
import json
import os
import select
import socket
import stat
import time

from kforge_harness import protocol

# The deepest a child's line may nest. The harness's own messages nest 4 deep; a line
# nested past Python's recursion limit would raise RecursionError in the decoder (and a
# little less deep, in the encoder of the judge's command): a crash of the server.
MAX_DEPTH = 32


class Channel:
    """`result_fd`: what this process writes to (a pipe, or a socket when it sends
    descriptors); `command_fd`: what it reads commands from (a pipe, or a socket when
    descriptors come with them, SCM_RIGHTS). A message that carries descriptors says how
    many in its "fds" field; they are taken with take_fds() after command() returned it."""

    def __init__(self, result_fd, command_fd=None):
        self.result_fd = result_fd
        self.command_fd = command_fd
        self.pending = b""
        # When the last command's line was whole (time.perf_counter_ns), before it was
        # decoded: where the child's own work on that command begins.
        self.command_read_ns = 0
        self.received_fds = collections.deque()
        self.command_socket = None
        if command_fd is not None and stat.S_ISSOCK(os.fstat(command_fd).st_mode):
            self.command_socket = socket.socket(fileno=os.dup(command_fd))

    def send(self, obj, fds=()):
        data = protocol.encode(dict(obj, fds=len(fds)) if fds else obj).encode("utf-8")
        if fds:
            with socket.socket(fileno=os.dup(self.result_fd)) as sock:
                data = data[socket.send_fds(sock, [data], list(fds)):]
        while data:
            data = data[os.write(self.result_fd, data):]

    def command(self):
        """The next command line as a JSON object; None at EOF (the server is done with
        this child)."""
        while b"\n" not in self.pending:
            if self.command_socket is not None:
                chunk, fds, _, _ = socket.recv_fds(self.command_socket, 1 << 16, 64)
                self.received_fds.extend(fds)
            else:
                chunk = os.read(self.command_fd, 1 << 16)
            if not chunk:
                return None
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        self.command_read_ns = time.perf_counter_ns()
        return json.loads(line)

    def wait_for(self, fds):
        """Blocks until a command can be read or one of `fds` is readable; returns those of
        `fds` that are (every one of them first, a command waiting or not)."""
        source = self.command_socket.fileno() if self.command_socket is not None else self.command_fd
        if b"\n" in self.pending:  # a command read already: only the rings there are now
            ready, _, _ = select.select(list(fds), [], [], 0)
            return ready
        ready, _, _ = select.select([*fds, source], [], [])
        return [fd for fd in ready if fd != source]

    def take_fds(self, count):
        """The `count` descriptors that came with the last command (SCM_RIGHTS keeps them
        in order, and they arrive no later than the line they belong to)."""
        if len(self.received_fds) < count:
            raise OSError(f"a command announced {count} descriptor(s), {len(self.received_fds)} came")
        return [self.received_fds.popleft() for _ in range(count)]


def decode(line):
    """A line a child wrote, as a JSON object; None for anything else (not JSON, not an
    object, nested deeper than MAX_DEPTH): a child's line is data to validate, and a
    malformed one must never raise in the server."""
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(message, dict):
        return None
    level = [message]
    for _ in range(MAX_DEPTH):  # breadth first, without recursion
        level = [item for container in level
                 for item in (container.values() if isinstance(container, dict) else container)
                 if isinstance(item, (dict, list))]
        if not level:
            return message
    return None
