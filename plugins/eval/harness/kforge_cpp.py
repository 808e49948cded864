"""The helper a `cpp` candidate uses to build and call its C++ code.

    lib = kforge_cpp.load(cpp_source)       # a ctypes.CDLL
    lib.my_kernel(kforge_cpp.ptr(x), kforge_cpp.ptr(y), ctypes.c_int64(n))

When the environment variable KFORGE_CPP_ARTIFACT names a library the C++ compile stage
built from this very source, load() loads it and compiles nothing. The stage keeps the
source it compiled beside the library (`<key>.so` and `<key>.cpp`); the library is taken
only when that file holds exactly `cpp_source`, byte for byte. Otherwise load() compiles
`cpp_source` itself with `g++ -O3 -fopenmp -shared -fPIC -std=c++17` (CXX overrides the
compiler) into a cache keyed by the SHA-256 of the source: KFORGE_CPP_CACHE, default a
directory of this process' own. A default shared between candidates' processes would be
a cache one candidate fills with the library another then loads; the shared, trusted
cache is the C++ compile stage's.
"""

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile

CXX_FLAGS = ("-O3", "-fopenmp", "-shared", "-fPIC", "-std=c++17")
SOURCE_NAME = "cpp_source.cpp"  # compiler messages read "cpp_source.cpp:LINE:COL: error"


class CompileError(Exception):
    """g++ rejected the source (the message keeps its file:line diagnostics), or the built
    library could not be loaded."""


def source_digest(cpp_source):
    return hashlib.sha256(cpp_source.encode("utf-8")).hexdigest()


_own_cache = (None, None)  # (pid, directory): a forked child makes its own


def cache_dir():
    global _own_cache
    path = os.environ.get("KFORGE_CPP_CACHE")
    if path:
        os.makedirs(path, exist_ok=True)
        return path
    pid, path = _own_cache
    if pid != os.getpid() or not os.path.isdir(path):
        path = tempfile.mkdtemp(prefix="kforge-cpp-")  # mode 0700
        _own_cache = (os.getpid(), path)
    return path


def _artifact_for(cpp_source):
    """KFORGE_CPP_ARTIFACT when the source kept beside it is exactly `cpp_source`."""
    artifact = os.environ.get("KFORGE_CPP_ARTIFACT")
    if not artifact or not os.path.isfile(artifact):
        return None
    try:
        with open(os.path.splitext(artifact)[0] + ".cpp", "rb") as handle:
            built_from = handle.read()
    except OSError:
        return None
    return artifact if built_from == cpp_source.encode("utf-8") else None


def compile_source(cpp_source, output):
    """Compiles into `output` atomically: concurrent children may build the same source."""
    with tempfile.TemporaryDirectory(prefix="kforge-cpp-") as build:
        with open(os.path.join(build, SOURCE_NAME), "w", encoding="utf-8") as handle:
            handle.write(cpp_source)
        compiler = os.environ.get("CXX", "g++")
        if shutil.which(compiler) is None:
            raise CompileError(f"C++ compiler {compiler!r} not found on PATH "
                               "(set CXX or install g++)")
        command = [compiler, *CXX_FLAGS, SOURCE_NAME, "-o", "lib.so"]
        done = subprocess.run(command, cwd=build, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise CompileError(f"{' '.join(command)} failed (exit {done.returncode}):\n"
                               + (done.stderr or done.stdout).strip())
        staged = f"{output}.{os.getpid()}.tmp"
        shutil.copyfile(os.path.join(build, "lib.so"), staged)
        os.replace(staged, output)


def load(cpp_source):
    """The library built from `cpp_source`, loaded with ctypes."""
    path = _artifact_for(cpp_source)
    if path is None:
        path = os.path.join(cache_dir(), source_digest(cpp_source) + ".so")
        if not os.path.isfile(path):
            compile_source(cpp_source, path)
    try:
        return ctypes.CDLL(path)
    except OSError as exc:  # e.g. an undefined symbol: a link error in effect
        raise CompileError(f"cannot load the library built from cpp_source: {exc}") from None


def ptr(tensor):
    """The address of a tensor's first element, for a `T*` parameter."""
    data_ptr = getattr(tensor, "data_ptr", None)
    if data_ptr is None:
        raise TypeError(f"kforge_cpp.ptr takes a torch.Tensor, got {type(tensor).__name__}")
    return ctypes.c_void_p(data_ptr())
