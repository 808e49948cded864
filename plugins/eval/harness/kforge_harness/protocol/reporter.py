"""A child's two pipes to the server: JSON lines it sends (`send`) and JSON lines of
commands it reads (`command`).

What a child sends is data, never a verdict: the server decides what it means, and for
the candidate child it trusts nothing that child sends after the marker
{"candidate_code": "start"} (from then on, code it does not control runs there)."""

import json
import os

from kforge_harness import protocol

# The deepest a child's line may nest. The harness's own messages nest 4 deep; a line
# nested past Python's recursion limit would raise RecursionError in the decoder (and a
# little less deep, in the encoder of the judge's command): a crash of the server.
MAX_DEPTH = 32


class Channel:
    def __init__(self, result_fd, command_fd=None):
        self.result_fd = result_fd
        self.command_fd = command_fd
        self.pending = b""

    def send(self, obj):
        data = protocol.encode(obj).encode("utf-8")
        while data:
            data = data[os.write(self.result_fd, data):]

    def command(self):
        """The next command line as a JSON object; None at EOF (the server is done with
        this child)."""
        while b"\n" not in self.pending:
            chunk = os.read(self.command_fd, 1 << 16)
            if not chunk:
                return None
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        return json.loads(line)


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
