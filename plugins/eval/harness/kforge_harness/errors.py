"""Turning a Python exception raised by candidate or reference code into an error class
and a one-line message that points at the candidate's own line."""

import os
import traceback

from . import protocol

# Exception type names (anywhere in the MRO) that mean "the kernel did not build".
# Matched by name: triton and kforge_cpp are imported lazily, or not at all.
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


def _type_names(exc):
    return {cls.__name__ for cls in type(exc).__mro__}


def classify(exc, default):
    """The error class of `exc`; `default` when nothing more specific applies
    (init_error for a constructor, runtime_error for forward)."""
    names = _type_names(exc)
    text = str(exc).lower()
    if "SyntaxError" in names:  # the candidate file itself does not parse
        return protocol.SYNTAX_ERROR
    if names & _COMPILE_TYPES or any(t.lower() in text for t in _COMPILE_TEXT):
        return protocol.COMPILE_ERROR
    if names & _OOM_TYPES or any(t in text for t in _OOM_TEXT):
        return protocol.OUT_OF_MEMORY
    if any(t in text for t in _DEVICE_TEXT):
        return protocol.DEVICE_ERROR
    return default


def describe(exc, candidate_file=None):
    """'Type: message (file.py:LINE, in func)', the location being the innermost frame in
    the candidate's file when there is one, else the innermost frame."""
    if isinstance(exc, SyntaxError):  # its location is the parsed file's, not a frame's
        return (f"{type(exc).__name__}: {exc.msg} "
                f"({os.path.basename(exc.filename or '?')}:{exc.lineno})")
    text = str(exc).strip()
    head = type(exc).__name__ + (f": {text}" if text else "")
    frames = traceback.extract_tb(exc.__traceback__)
    if candidate_file:
        own = [f for f in frames if os.path.abspath(f.filename) == candidate_file]
        frames = own or frames
    if frames:
        last = frames[-1]
        head += f" ({os.path.basename(last.filename)}:{last.lineno}, in {last.name})"
    return head
