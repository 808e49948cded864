"""What this machine has for building and running candidates, asked by the trusted side
(the server) so that a candidate's word is never taken for it."""

import functools
import glob
import importlib.util
import os
import sysconfig


@functools.lru_cache(maxsize=None)
def has_triton():
    return importlib.util.find_spec("triton") is not None


@functools.lru_cache(maxsize=None)
def _include_dirs():
    """Where a load_inline build looks for headers: torch's include directories, the
    interpreter's, pybind11's own (a pip install keeps them in site-packages), the CUDA
    toolkit's and the system's."""
    dirs = ["/usr/include", "/usr/local/include", sysconfig.get_paths().get("include") or ""]
    try:
        from torch.utils import cpp_extension  # noqa: PLC0415 - heavy, only when asked
        dirs += cpp_extension.include_paths()
    except Exception:  # noqa: BLE001 - no torch extension support: only the others count
        pass
    try:
        import pybind11  # noqa: PLC0415 - optional
        dirs.append(pybind11.get_include())
    except Exception:  # noqa: BLE001
        pass
    cuda_home = os.environ.get("CUDA_HOME") or "/usr/local/cuda"
    dirs.append(os.path.join(cuda_home, "include"))
    dirs += glob.glob("/usr/include/*-linux-gnu")
    return tuple(d for d in dirs if d and os.path.isdir(d))


def header_available(header):
    """Whether `header` (e.g. "pybind11/pybind11.h") is in an include directory a
    candidate's build searches."""
    return any(os.path.isfile(os.path.join(d, header)) for d in _include_dirs())
