"""Runtime guards in the candidate's child: what L1 (the static check) cannot see, refused
while it happens.

L1 reads the candidate's source; Python can reach anything at run time (a module
attribute that leads back to builtins, sys, ctypes or subprocess; getattr over built
names; exec of a string; replacing forward after import), and so can native code. Two
guards turn such escapes into a rejected candidate, installed right before the candidate
is imported (install()):

- an audit hook (PEP 578) that refuses, when candidate code is responsible, what no kernel
  needs at run time: code from strings (exec, compile, eval, also C code calling
  PyRun_*), frame and object-graph introspection (sys._getframe, gc.get_objects and
  referrers, traceback and generator frames, settrace/setprofile, more audit hooks),
  processes (subprocess, os.system, exec, spawn, fork), ctypes beyond what the language
  needs, and opening /proc/self/mem. "Candidate code is responsible" means: walking the
  Python stack out from the event, past library frames (the standard library, other
  packages, code they generated: they act for whoever called them), the first frame met
  is the candidate's file or the child's work directory; torch's, triton's,
  NumPy's and the harness's frames are trusted (torch and triton exec generated code and
  run compilers for honest kernels). The import system loading a module from a file is
  an import, not code from a string, unless the file lies in the work directory (the
  candidate's own file excepted).
- a torch dispatch mode during each trial's forward (compute_guard()) that records every
  aten operator outside allocation, views, copies and metadata: torch doing the work
  the kernel should (L1's torch-compute rule, however torch was reached, also from C++).

Both run in the candidate's own process: native code can take them apart. They make
Python escapes visible, never decide a pass: every verdict still rests on the trusted
side (the task host's comparison, the server's clock). Each refusal is recorded; the
child reports the record with its trials and the server rejects the candidate
(`cheat_detected`, "runtime guard: ...")."""

import os
import sys
import threading
import types

from kforge_harness.protocol.errors import GUARD_REFUSAL

# Events whose responsible frame is judged, and what they are, for the message.
_ACTIONS = {
    "exec": "code compiled from a string was executed",
    "compile": "source was compiled at run time",
    "sys._getframe": "a stack frame was taken",
    "sys._current_frames": "the stack frames of every thread were taken",
    "gc.get_objects": "the garbage collector's objects were walked",
    "gc.get_referrers": "the garbage collector's referrers were walked",
    "gc.get_referents": "the garbage collector's referents were walked",
    "sys.settrace": "a trace function was set",
    "sys.setprofile": "a profile function was set",
    "sys.addaudithook": "an audit hook was added",
    "os.system": "a shell command was run",
    "os.fork": "the process forked",
    "os.forkpty": "the process forked",
    "os.posix_spawn": "a program was spawned",
    "os.exec": "a program was executed",
    "os.spawn": "a program was spawned",
    "pty.spawn": "a program was spawned",
    "subprocess.Popen": "a program was started",
    "ctypes.dlopen": "a library was loaded through ctypes",
    "ctypes.dlsym": "a symbol was looked up through ctypes",
    "ctypes.call_function": "a foreign function was called through ctypes",
    "ctypes.addressof": "an address was taken through ctypes",
    "ctypes.string_at": "memory was read through ctypes",
    "ctypes.wstring_at": "memory was read through ctypes",
    "ctypes.cdata": "memory was viewed through ctypes",
    "ctypes.cdata/buffer": "memory was viewed through ctypes",
    "open": "a file was opened",
    "object.__getattr__": "an object's internals were read",
    "object.__setattr__": "a function was rewritten in place",
    "pickle.find_class": "a class was loaded by pickle",
    "marshal.loads": "code was unmarshalled",
}
# object.__getattr__ is audited for these attribute names (they give frames and code).
_INTERNALS = {"gi_frame", "cr_frame", "ag_frame", "tb_frame", "f_back", "gi_code", "cr_code",
              "ag_code", "__code__", "__globals__", "f_globals", "f_locals"}
# Programs each language's own tool chain runs (torch's cpp_extension and kforge_cpp
# build with these; triton assembles with ptxas and finds libcuda with ldconfig).
_PROGRAMS = {
    "triton": {"ptxas", "ldconfig", "cuobjdump", "nvdisasm", "gcc", "cc", "clang"},
    "cuda": {"nvcc", "ninja", "c++", "g++", "gcc", "cc", "clang++", "ptxas", "cicc", "fatbinary",
             "nvlink", "ld", "which", "ldconfig", "cudafe++"},
    "cpp": {"c++", "g++", "gcc", "cc", "clang++", "ld", "as"},
    "python": set(),
}


class _State:
    def __init__(self, language, candidate_path, workdir):
        self.language = language
        self.workdir = os.path.realpath(workdir) + os.sep
        self.candidate_path = os.path.realpath(candidate_path)
        self.trusted = tuple(p + os.sep for p in _trusted_roots())
        self.violations = []
        self.local = threading.local()


_state = None


def _trusted_roots():
    import importlib.util
    from kforge_harness import HARNESS_DIR
    roots = [os.path.realpath(HARNESS_DIR)]
    for name in ("torch", "triton", "numpy", "torch_npu", "mindspore"):
        spec = importlib.util.find_spec(name) if name in sys.modules else None
        if spec is not None and spec.submodule_search_locations:
            roots += [os.path.realpath(p) for p in spec.submodule_search_locations]
    return roots


def _kind_of(state, filename):
    """"trusted" (torch's, triton's, NumPy's, the harness's own code), "candidate" (the
    candidate's file, anything in the child's work directory) or "library" (everything
    else: the standard library, other packages, generated code), which decides nothing
    by itself: what matters is who called it."""
    if not filename or filename.startswith("<"):
        # Code compiled from a string: the candidate cannot make any (exec and compile
        # are refused to it), so it is a library's (torch generates modules so, triton
        # its launchers), acting for whoever called it.
        return "library"
    path = os.path.realpath(filename)
    if path.startswith(state.workdir):
        return "candidate"
    if path.startswith(state.trusted):
        return "trusted"
    return "library"


def _responsible(state, frame):
    """(kind, file) of the frame that decides: the first one out from `frame` that is
    not library code."""
    while frame is not None:
        kind = _kind_of(state, frame.f_code.co_filename)
        if kind != "library":
            return kind, frame.f_code.co_filename
        frame = frame.f_back
    return "trusted", ""


def _imported(state, frame, event, args):
    """Whether an exec/compile event is the import system loading a module from a file
    that is not the child's own work (an import, not code from a string): (decided,
    allowed)."""
    if not frame.f_code.co_filename.startswith("<frozen importlib"):
        return False, False
    if event == "exec":
        code = args[0] if args else None
        filename = getattr(code, "co_filename", "")
    else:
        filename = args[1] if len(args) > 1 else ""
    filename = os.fsdecode(filename) if isinstance(filename, (str, bytes)) else ""
    path = os.path.realpath(filename) if filename else ""
    return True, bool(path) and (not path.startswith(state.workdir) or path == state.candidate_path)


def _allowed_program(state, args):
    """subprocess.Popen's (executable, args, ...): a program of the language's tool
    chain."""
    program = args[0] if args else None
    if program is None and len(args) > 1 and args[1]:
        program = args[1][0] if isinstance(args[1], (list, tuple)) else str(args[1]).split()[0]
    name = os.path.basename(os.fsdecode(program)) if program else ""
    return name in _PROGRAMS.get(state.language, set())


def _refused(state, event, args):
    """Why `event` is refused now, or None."""
    if event == "object.__getattr__":
        if len(args) < 2 or args[1] not in _INTERNALS:
            return None
    elif event == "object.__setattr__":
        # Rewriting a function in place (its code, globals, defaults): the harness's own
        # functions that run in this process included.
        if len(args) < 2 or not isinstance(args[0], (types.FunctionType, types.CodeType)):
            return None
    elif event == "open":
        path = args[0] if args else None
        if not isinstance(path, (str, bytes)) or os.fsdecode(path) not in (
                "/proc/self/mem", f"/proc/{os.getpid()}/mem"):
            return None
    elif not (event in _ACTIONS or event.startswith(("os.exec", "os.spawn"))):
        return None
    frame = sys._getframe(2)
    if event in ("exec", "compile"):
        decided, allowed = _imported(state, frame, event, args)
        if decided:
            return None if allowed else f"{_ACTIONS[event]} ({event}, an import from the work directory)"
    kind, where = _responsible(state, frame)
    if event == "subprocess.Popen":
        # The tool chain of the candidate's own language, run by torch, triton or
        # kforge_cpp for it; never by the candidate's own code, never another program.
        if kind == "trusted" and _allowed_program(state, args):
            return None
        return f"a program was started ({str(args[:2])[:200]})"
    if kind != "candidate":
        return None
    if event.startswith("ctypes.") and state.language == "cpp" and event != "ctypes.dlopen":
        # A cpp candidate calls its own library through ctypes (kforge_cpp.load loads it,
        # from the harness's code): calls, symbols and pointers are its way in.
        return None
    what = _ACTIONS.get(event) or _ACTIONS["os.exec" if event.startswith("os.exec") else "os.spawn"]
    return f"{what} ({event}, from {os.path.basename(where) or 'code from a string'})"


def _hook(event, args):
    state = _state
    if state is None or getattr(state.local, "busy", False):
        return
    state.local.busy = True
    try:
        why = _refused(state, event, args)
    finally:
        state.local.busy = False
    if why is not None:
        state.violations.append(why)
        raise RuntimeError(f"{GUARD_REFUSAL}: {why}")


def install(language, candidate_path, workdir):
    """Installs the audit hook (once per process: audit hooks cannot be removed)."""
    global _state
    if _state is not None:
        return
    _state = _State(language, candidate_path, workdir)
    sys.addaudithook(_hook)


def violations():
    """What the guards refused or recorded so far (a copy)."""
    return list(_state.violations) if _state is not None else []


# ---- torch computing in the candidate's forward ----

# aten operators a kernel's forward may run through torch: allocation and initialisation,
# views and copies, dtype and device moves, metadata (L1's allowlist, at run time).
PLUMBING = frozenset("""
empty empty_like empty_strided new_empty new_empty_strided zeros zeros_like new_zeros ones
ones_like new_ones full full_like new_full fill fill_ zero zero_ arange rand rand_like randn
randn_like randint randint_like randperm normal normal_ uniform uniform_ random random_
bernoulli_ scalar_tensor lift lift_fresh lift_fresh_copy tensor as_tensor _to_copy to copy copy_
_copy_from _copy_from_and_resize clone contiguous view _unsafe_view view_as view_copy reshape
_reshape_alias flatten unflatten squeeze squeeze_ unsqueeze unsqueeze_ permute transpose
transpose_ t t_ expand expand_as expand_copy narrow narrow_copy select slice slice_copy unbind
split split_with_sizes chunk unsafe_split unsafe_chunk detach detach_ alias as_strided
as_strided_ movedim moveaxis swapaxes swapdims resize_ resize_as_ set_ _pin_memory is_pinned
index _local_scalar_dense item _has_compatible_shallow_copy_type is_same_size
_nested_tensor_from_tensor_list _conj _neg_view resolve_conj resolve_neg real imag
view_as_real view_as_complex sym_size sym_stride sym_numel sym_storage_offset
record_stream _efficientzerotensor
""".split())

_COMPUTE_GUARDED = ("triton", "cpp", "cuda")


def compute_guard(language):
    """A context manager for a trial's forward that records torch operators beyond
    PLUMBING (none for the reference as its own candidate, or a pure-torch language)."""
    import contextlib
    if language not in _COMPUTE_GUARDED:
        return contextlib.nullcontext()
    from torch.utils._python_dispatch import TorchDispatchMode

    class _Guard(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            name = func.overloadpacket.__name__ if hasattr(func, "overloadpacket") else str(func)
            if name.rstrip("_") not in PLUMBING and name not in PLUMBING and _state is not None:
                why = f"torch computed aten::{name} in the candidate's forward"
                if why not in _state.violations:
                    _state.violations.append(why)
            return func(*args, **(kwargs or {}))

    return _Guard()
