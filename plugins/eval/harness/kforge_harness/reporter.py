"""The child's side of the result pipe: progress lines, then one result line.

Each line is a JSON object: {"phase": "..."} when the child enters a phase (so that when
it dies by a signal or a timeout the server can say where: "SIGSEGV in candidate forward,
trial 1"), then {"result": {...}} once, at the end."""

import os

from . import protocol


class Reporter:
    def __init__(self, fd):
        self.fd = fd

    def _write(self, obj):
        data = protocol.encode(obj).encode("utf-8")
        while data:
            data = data[os.write(self.fd, data):]

    def phase(self, name):
        self._write({"phase": name})

    def result(self, result):
        self._write({"result": result})
