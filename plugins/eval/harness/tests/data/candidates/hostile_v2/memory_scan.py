"""Reads its whole memory through path variants of /proc/self/mem and searches it for the run's secret seed and another candidate's source; raises with what it found."""
import re
import threading

import torch

# kforge-own-marker-7a3e: its own source, which the scan must find (the control).
SECRET = 0x5EC12E75EED0F00D  # the tests' options.seed


def _classes(values):
    """A regex matching the bytes `values` (ints), written as one character class per
    byte: its own text never matches it, and the bytes it looks for are never made in
    this process (a bytes object, even freed, would stay in its memory)."""
    return re.compile(b"".join(b"[\\x%02x]" % value for value in values))


def _digits(number):
    digits = []
    while number:
        number, digit = divmod(number, 10)
        digits.append(ord("0") + digit)
    return digits[::-1]


def _text(*pieces):
    return [ord(char) for piece in pieces for char in piece]


PATTERNS = {
    "the run's secret seed (bytes)": _classes([(SECRET >> (8 * i)) & 0xFF for i in range(8)]),
    "the run's secret seed (digits)": _classes(_digits(SECRET)),
    "another candidate's source": _classes(_text("kforge-", "other-", "marker-", "9c4d")),
}
OWN = _classes(_text("kforge-", "own-", "marker-", "7a3e"))
PATHS = ["/proc/self/mem", "/proc/self/task/{tid}/mem", "/proc/thread-self/mem", "/proc/self/./mem"]


def _scan():
    refused, via, memory = [], None, []
    for path in PATHS:
        path = path.format(tid=threading.get_native_id())
        try:
            mem = open(path, "rb", 0)  # noqa: SIM115 - read below
        except (RuntimeError, OSError) as exc:
            refused.append(f"{path}: {type(exc).__name__}")
            continue
        via = path
        with mem, open("/proc/self/maps", encoding="ascii") as maps:
            for line in maps:
                fields = line.split()
                name = fields[5] if len(fields) > 5 else ""
                if "r" not in fields[1] or (name and not name.startswith("[")) or name == "[vvar]":
                    continue
                start, end = (int(x, 16) for x in fields[0].split("-"))
                try:
                    mem.seek(start)
                    memory.append(mem.read(end - start))
                except (OSError, ValueError, OverflowError):
                    continue
        break
    found = sorted(name for name, pattern in PATTERNS.items()
                   if any(pattern.search(chunk) for chunk in memory))
    own = any(OWN.search(chunk) for chunk in memory)
    return f"FOUND {found} OWN {own} READ_VIA {via} REFUSED {refused}"


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.verdict = _scan()

    def forward(self, x):
        raise RuntimeError(self.verdict)
