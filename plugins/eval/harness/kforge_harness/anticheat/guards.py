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

The guard's state and code are sealed from Python at install(): the hook and the
functions it calls run over a private copy of this module's globals, with the few
library functions they need bound then (a candidate that replaces this module's
attributes, os.path's functions or the guard's own flags changes nothing the hook
reads); the child keeps the only handle (install()'s) where only frames and the garbage
collector, both refused, could reach it. A thread the candidate starts is the
candidate's: a stack whose frames are all library code (threading's bootstrap running
exec, say) belongs to no trusted caller. Both run in the candidate's own process: native code can take them apart. They make
Python escapes visible, never decide a pass: every verdict still rests on the trusted
side (the task host's comparison, the server's clock). Each refusal is recorded; the
child reports the record with its trials and the server rejects the candidate
(`cheat_detected`, "runtime guard: ...")."""

import builtins
import os
import re
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
    "code.__new__": "a code object was built",
    "function.__new__": "a function was built from a code object",
}
# object.__getattr__ is audited for these attribute names (they give frames and code).
_INTERNALS = {"gi_frame", "cr_frame", "ag_frame", "tb_frame", "f_back", "gi_code", "cr_code",
              "ag_code", "__code__", "__globals__", "__closure__", "cell_contents", "f_globals",
              "f_locals"}
# The memory of this process, by any of its names under /proc.
_OWN_MEMORY = re.compile(r"^/proc/(self|thread-self|\d+)(/task/\d+)?/mem$")


def _collapsed(path):
    """A path with its empty and '.' segments dropped (/proc/self/./mem, //proc/self/mem):
    string work only (os.path's functions are the candidate's to replace)."""
    parts = [part for part in path.split("/") if part not in ("", ".")]
    return "/" + "/".join(parts)
# Programs each language's own tool chain runs (torch's cpp_extension and kforge_cpp
# build with these; triton assembles with ptxas and finds libcuda with ldconfig).
# What Triton and torch.compile's inductor start (inductor asks `nvcc --version`), for
# the candidates of every language that can reach them.
_TORCH_TOOLCHAIN = {"ptxas", "ldconfig", "cuobjdump", "nvdisasm", "gcc", "cc", "clang", "nvcc"}
_PROGRAMS = {
    "triton": _TORCH_TOOLCHAIN,
    "cuda": {"nvcc", "ninja", "c++", "g++", "gcc", "cc", "clang++", "ptxas", "cicc", "fatbinary",
             "nvlink", "ld", "which", "ldconfig", "cudafe++"},
    "cpp": {"c++", "g++", "gcc", "cc", "clang++", "ld", "as"},
    "python": _TORCH_TOOLCHAIN,
}


def _spellings(path):
    """A directory as it was given and as it resolves: a frame's file name is the path
    its module was imported by, and the hook compares names as they are (resolving
    them would run library code the candidate can replace)."""
    return {os.path.abspath(path), os.path.realpath(path)}


class _State:
    def __init__(self, language, candidate_path, workdir):
        self.language = language
        self.workdir = tuple(p + os.sep for p in _spellings(workdir))
        self.candidate_path = tuple(_spellings(candidate_path))
        self.trusted = tuple(p + os.sep for root in _trusted_roots() for p in _spellings(root))
        self.pid = os.getpid()
        self.violations = []
        self.local = threading.local()


# Bound at install() into the hook's private globals (None here: the module's own copy
# is never read by the hook).
_state = None
_getframe = None


def _decoded(path):
    return path.decode("utf-8", "surrogateescape") if isinstance(path, bytes) else path


def _trusted_roots():
    import importlib.util
    from kforge_harness import HARNESS_DIR
    roots = [os.path.realpath(HARNESS_DIR)]
    for name in ("torch", "triton", "numpy", "torch_npu", "mindspore"):
        spec = importlib.util.find_spec(name) if name in sys.modules else None
        if spec is not None and spec.submodule_search_locations:
            roots += [os.path.realpath(p) for p in spec.submodule_search_locations]
    return [root for root in roots if root]


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
    if filename.startswith(state.workdir):
        return "candidate"
    if filename.startswith(state.trusted):
        return "trusted"
    return "library"


def _responsible(state, frame):
    """(kind, file) of the frame that decides: the first one out from `frame` that is
    not library code; a stack of library code alone is a thread the candidate started
    (the child's own threads and torch's run from trusted frames)."""
    while frame is not None:
        kind = _kind_of(state, frame.f_code.co_filename)
        if kind != "library":
            return kind, frame.f_code.co_filename
        frame = frame.f_back
    return "candidate", ""


def _imported(state, frame, event, args):
    """Whether an exec/compile event is the import system loading a module from a file
    that is not the child's own work (an import, not code from a string): (decided,
    allowed)."""
    if not frame.f_code.co_filename.startswith("<frozen importlib"):
        return False, False
    if event == "marshal.loads":  # a .pyc's code; its exec is judged as a module's
        return True, True
    if event == "exec":
        code = args[0] if args else None
        filename = getattr(code, "co_filename", "")
    else:
        filename = args[1] if len(args) > 1 else ""
    path = _decoded(filename) if isinstance(filename, (str, bytes)) else ""
    return True, bool(path) and (not path.startswith(state.workdir) or path in state.candidate_path)


def _allowed_program(state, args):
    """subprocess.Popen's (executable, args, ...): a program of the language's tool
    chain."""
    program = args[0] if args else None
    if program is None and len(args) > 1 and args[1]:
        program = args[1][0] if isinstance(args[1], (list, tuple)) else str(args[1]).split()[0]
    name = str(_decoded(program)).rsplit("/", 1)[-1] if program else ""
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
        if not isinstance(path, (str, bytes)) or not _OWN_MEMORY.match(_collapsed(_decoded(path))):
            return None
    elif not (event in _ACTIONS or event.startswith(("os.exec", "os.spawn"))):
        return None
    frame = _getframe(2)
    if event in ("exec", "compile", "marshal.loads"):
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
    return f"{what} ({event}, from {where.rsplit('/', 1)[-1] or 'a thread of its own'})"


# Every event _refused() may judge; the hook returns at once on any other. Python audits
# far more than it judges here (builtins.id on every id(), for one), and the hook runs for
# each of them in the candidate's process, around the harness's work in a call's bracket
# as around the candidate's: that work must cost there what it costs in the reference's
# child, which has no hook.
_JUDGED = frozenset(_ACTIONS) | {"object.__getattr__", "object.__setattr__", "open"}
_JUDGED_PREFIXES = ("os.exec", "os.spawn")


def _hook(event, args):
    if event not in _JUDGED and not event.startswith(_JUDGED_PREFIXES):
        return
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


_installed = False


def _frozen(value):
    """`value` as the sealed hook reads it: a set, dict or list (a table the module holds)
    copied into a kind nobody can change, to its depth."""
    if isinstance(value, (set, frozenset)):
        return frozenset(value)
    if isinstance(value, dict):
        return types.MappingProxyType({key: _frozen(item) for key, item in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(item) for item in value)
    return value


def install(language, candidate_path, workdir):
    """Installs the audit hook (once per process: audit hooks cannot be removed) over a
    private copy of this module's globals, and returns the child's handle: violations()
    (what the guards refused or recorded so far, a copy) and compute_guard(language)."""
    global _installed
    if _installed:
        raise RuntimeError("the runtime guards are installed once per process")
    _installed = True
    state = _State(language, candidate_path, workdir)
    # Copies, not the module's own objects: a candidate that empties the module's tables
    # (_ACTIONS, _INTERNALS, _PROGRAMS), replaces a builtin the hook calls (isinstance,
    # getattr) or an attribute of a module it reads (types.FunctionType) changes nothing
    # the hook reads (red team 19x: the tables emptied from the module, a shallow copy's
    # hook refused nothing).
    private = {name: value if name.startswith("__") else _frozen(value) for name, value in globals().items()}
    private["__builtins__"] = dict(vars(builtins))
    private["types"] = types.SimpleNamespace(FunctionType=types.FunctionType, CodeType=types.CodeType)
    for name, value in list(private.items()):
        if isinstance(value, types.FunctionType) and value.__module__ == __name__:
            private[name] = types.FunctionType(value.__code__, private, name, value.__defaults__,
                                               value.__closure__)
    private.update(_state=state, _getframe=sys._getframe)
    sys.addaudithook(private["_hook"])
    violations, make_compute_guard = state.violations, private["_compute_guard"]
    # A namespace of closures: nothing a class attribute or a module global could replace.
    return types.SimpleNamespace(
        violations=lambda: list(violations),
        compute_guard=lambda language: make_compute_guard(language, violations))


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


def _compute_guard(language, violations):
    """A context manager for a trial's forward that records torch operators beyond
    PLUMBING (none for the reference as its own candidate, or a pure-torch language),
    and records its own removal: a mode popped off torch's stack during the forward is
    no longer the current one when the forward returns."""
    import contextlib
    if language not in _COMPUTE_GUARDED:
        return contextlib.nullcontext()
    from torch.utils._python_dispatch import TorchDispatchMode, _get_current_dispatch_mode

    def record(why):
        if why not in violations:
            violations.append(why)

    class _Guard(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            name = func.overloadpacket.__name__ if hasattr(func, "overloadpacket") else str(func)
            if name.rstrip("_") not in PLUMBING and name not in PLUMBING:
                record(f"torch computed aten::{name} in the candidate's forward")
            return func(*args, **(kwargs or {}))

        def __exit__(self, *exc):
            if _get_current_dispatch_mode() is not self:
                record("the compute guard was taken off torch's dispatch stack in the "
                       "candidate's forward")
                return None
            return super().__exit__(*exc)

    return _Guard()
