"""Exceptions as data, and data as error classes.

A process that runs untrusted code (the candidate child) turns what its code raised into
plain data (`report`: type names, text, where); the trusted side classifies that data
(`classify`) and decides who is blamed. Nothing here ever touches a live candidate object
on the trusted side."""

import os
import re
import traceback

from kforge_harness import protocol

# Exception type names (anywhere in the MRO) that mean "the kernel did not build".
# Matched by name: triton and kforge_cpp are imported lazily, or not at all.
# What anticheat/guards.py's refusals say (lower case): an attempt the runtime guards
# stopped is the candidate's cheat, whatever it raised around it.
GUARD_REFUSAL = "kforge runtime guard: refused"

_COMPILE_TYPES = {"CompilationError", "CompileError", "OutOfResources"}
_COMPILE_TEXT = ("Error building extension",)

_OOM_TYPES = {"MemoryError", "OutOfMemoryError"}
_OOM_TEXT = ("out of memory", "can't allocate memory", "cannot allocate memory",
             "std::bad_alloc", "failed to allocate")

# Device-side failures surface as RuntimeErrors whose text names the driver's error.
_DEVICE_TEXT = ("illegal memory access", "cuda error", "device-side assert",
                "misaligned address", "unspecified launch failure",
                "illegal instruction was encountered", "cudaerror", "cuda driver error",
                "acl error", "aclrt", "npu function error", "npu error",
                "acl stream synchronize failed", "vector core exception")

# Headers of the toolchain a candidate's build needs but does not provide, and the Debian
# package that provides each: a build that fails for want of one is the machine's fault.
TOOLCHAIN_HEADERS = {
    "pybind11/pybind11.h": "pybind11-dev",
    "Python.h": "python3-dev",
    "torch/extension.h": "libtorch-dev",
    "torch/types.h": "libtorch-dev",
    "cuda_runtime.h": "nvidia-cuda-toolkit (or the CUDA toolkit from NVIDIA)",
    "cuda.h": "nvidia-cuda-toolkit (or the CUDA toolkit from NVIDIA)",
}
# The toolchain headers a candidate of each language may build against: `cuda` ones build
# with load_inline (torch, pybind11, Python, CUDA); `cpp` and `python` ones with kforge_cpp
# or a CPU load_inline (no CUDA); `triton` ones build no extension of their own.
_CPU_HEADERS = frozenset(h for h in TOOLCHAIN_HEADERS if not h.startswith("cuda"))
LANGUAGE_HEADERS = {"cuda": frozenset(TOOLCHAIN_HEADERS), "cpp": _CPU_HEADERS,
                    "python": _CPU_HEADERS, "triton": frozenset()}
_MISSING_HEADER = re.compile(r"fatal error: ([\w./+-]+): No such file or directory")


def report(exc, candidate_file=None):
    """What a process tells the trusted side about an exception its code raised: the type
    names along the MRO, the text, and where (innermost frame in the candidate's file
    when there is one). Plain data; runs where the exception was raised."""
    names = [cls.__name__ for cls in type(exc).__mro__]
    try:
        text = str(exc).strip()
    except Exception:  # noqa: BLE001 - a __str__ that raises says nothing
        text = ""
    data = {"types": names, "text": text[:protocol.MAX_MESSAGE_CHARS], "where": ""}
    if isinstance(exc, SyntaxError):  # its location is the parsed file's, not a frame's
        data["text"] = exc.msg or ""
        data["where"] = f"{os.path.basename(exc.filename or '?')}:{exc.lineno}"
        return data
    frames = traceback.extract_tb(exc.__traceback__)
    if candidate_file:
        own = [f for f in frames if os.path.abspath(f.filename) == candidate_file]
        frames = own or frames
    if frames:
        last = frames[-1]
        data["where"] = f"{os.path.basename(last.filename)}:{last.lineno}, in {last.name}"
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        data["missing_module"] = exc.name
    return data


def describe(data):
    """'Type: text (file.py:LINE, in func)' from report() data."""
    names = data.get("types") or ["Exception"]
    text = data.get("text") or ""
    head = names[0] + (f": {text}" if text else "")
    if data.get("where"):
        head += f" ({data['where']})"
    return head


def classify(data, default):
    """The error class of report() data; `default` when nothing more specific applies
    (init_error for a constructor, runtime_error for forward)."""
    names = set(data.get("types") or [])
    text = (data.get("text") or "").lower()
    if GUARD_REFUSAL in text:  # anticheat/guards.py refused what it tried
        return protocol.CHEAT_DETECTED
    if "SyntaxError" in names:  # the candidate file itself does not parse
        return protocol.SYNTAX_ERROR
    if names & _COMPILE_TYPES or any(t.lower() in text for t in _COMPILE_TEXT):
        return protocol.COMPILE_ERROR
    if names & _OOM_TYPES or any(t in text for t in _OOM_TEXT):
        return protocol.OUT_OF_MEMORY
    if any(t in text for t in _DEVICE_TEXT):
        return protocol.DEVICE_ERROR
    return default


def missing_toolchain_header(text):
    """(header, package) when a compiler's output `text` says a header of the toolchain
    is missing, else None."""
    for header in _MISSING_HEADER.findall(text or ""):
        for known, package in TOOLCHAIN_HEADERS.items():
            if header == known or header.endswith("/" + known):
                return known, package
    return None


_ALLOCATION = re.compile(r"tried to allocate ([\d.]+) ([kmgt]i?b)", re.IGNORECASE)
_UNITS = {"k": 1 / (1 << 20), "m": 1 / 1024, "g": 1.0, "t": 1024.0}


def requested_gib(text):
    """GiB an out-of-memory message says was being allocated (torch's "Tried to allocate
    12.00 GiB"), or 0."""
    match = _ALLOCATION.search(text or "")
    if not match:
        return 0.0
    return float(match.group(1)) * _UNITS[match.group(2)[0].lower()]
