"""The task's own helper modules, carried to the candidate's sandbox.

A task may import Python modules that live beside it rather than in the Python
installation: KernelBenchX's test code appends `<task>/../../../utils` to sys.path and
imports `rand_tensor` from `data_utils.py` there. The reference worker (trusted, outside
any sandbox) finds them; the candidate's sandbox shows only the system and the Python
installation, so the same test code run with the candidate's function would fail to
import them, and the candidate would be blamed for the task's layout.

So the reference worker notes every module the task's code imported through sys.path
whose source file the sandbox does not show (collect), the server hands their sources to the candidate
child with its job, and the child serves them from memory under the same names and file
names (install), before it loads the task. Modules a library loads from a file of its
own cache (Triton's compiled launchers, TorchInductor's generated code, a
torch.utils.cpp_extension build) are not the task's: they are found by their file, not
through sys.path, and the candidate's process makes its own. Only source modules travel (a compiled
extension beside a task is not carried: the worker says so, as a task_error). The
sources are the task's, read by the trusted side; the candidate can change them in its
own process as it can change anything there, which gains it nothing: its outputs are
judged against the reference's."""

import importlib.abc
import importlib.util
import linecache
import os
import sys

from kforge_harness import protocol
from kforge_harness.sandbox import sandbox_fs

# Bounds on what one task carries (KernelBenchX's utils/ is three files, under 10 KB).
MAX_MODULES = 64
MAX_BYTES = 4 << 20


def snapshot():
    """The names imported so far: collect() reports what was imported after this. Call
    it before the task runs: it also fixes what the sandbox shows (sandbox_fs.prepare(),
    from this process's sys.path), which the task's code may extend."""
    sandbox_fs.prepare()
    return set(sys.modules)


def _shown_in_sandbox(path):
    real = os.path.realpath(path)
    return any(sandbox_fs.under(real, shown) for shown in sandbox_fs.prepare().readonly)


def _search_path():
    """The directories sys.path names now (the task's code may have added some)."""
    return {os.path.realpath(entry or os.getcwd()) for entry in sys.path if isinstance(entry, str)}


def _found_through(name, path, directories):
    """Whether the module `name` at `path` is where an import through one of
    `directories` finds it: <dir>/a/b.py (or .so...) or <dir>/a/b/__init__.py for "a.b"."""
    parts = name.split(".")
    real = os.path.realpath(path)
    for directory in directories:
        if not sandbox_fs.under(real, directory):
            continue
        pieces = os.path.relpath(real, directory).split(os.sep)
        stem = pieces[-1].split(".", 1)[0]
        if (pieces[:-1], stem) in ((parts[:-1], parts[-1]), (parts, "__init__")):
            return True
    return False


def collect(before):
    """[{"name", "path", "source", "package"}] for each module imported through sys.path
    since `before` (a snapshot()) from a source file the candidate's sandbox does not
    show. Raises a task_error for such a module that cannot travel (no source, too many,
    too large)."""
    found, total = [], 0
    directories = _search_path()
    for name in sorted(set(sys.modules) - before):
        module = sys.modules.get(name)
        path = getattr(module, "__file__", None)
        if (not path or not os.path.isabs(path) or _shown_in_sandbox(path)
                or not _found_through(name, path, directories)):
            continue
        if not path.endswith(".py"):
            raise protocol.task_error(
                f"the task imports {name} from {path}, which is not Python source: the "
                "candidate's sandbox cannot be given it; install it where the interpreter "
                "finds its packages")
        try:
            with open(path, encoding="utf-8") as handle:
                source = handle.read(MAX_BYTES + 1)
        except (OSError, UnicodeDecodeError) as exc:
            raise protocol.task_error(f"the task imports {name} from {path}, which cannot be "
                                      f"read for the candidate's sandbox: {exc}") from None
        total += len(source)
        found.append({"name": name, "path": path, "source": source,
                      "package": hasattr(module, "__path__")})
        if len(found) > MAX_MODULES or total > MAX_BYTES:
            raise protocol.task_error(
                f"the task imports more than {MAX_MODULES} modules or {MAX_BYTES >> 20} MiB of "
                "source from outside the Python installation: install them where the "
                "interpreter finds its packages (the candidate's sandbox shows those)")
    return found


class _TaskModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves the collected modules by name, ahead of the other finders: the task gets
    the helper the reference got, even where the sandbox shows another of that name."""

    def __init__(self, modules):
        self.modules = {m["name"]: m for m in modules}

    def find_spec(self, fullname, path=None, target=None):
        module = self.modules.get(fullname)
        if module is None:
            return None
        return importlib.util.spec_from_loader(fullname, self, origin=module["path"],
                                               is_package=module["package"])

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        entry = self.modules[module.__name__]
        path, source = entry["path"], entry["source"]
        linecache.cache[path] = (len(source), None, source.splitlines(True), path)
        module.__file__ = path
        if entry["package"]:
            module.__path__ = [os.path.dirname(path)]
        exec(compile(source, path, "exec"), module.__dict__)  # noqa: S102 - the task's own code


def install(modules):
    """Makes `modules` (collect()'s list, from the job) importable in this process."""
    if modules:
        sys.meta_path.insert(0, _TaskModules(modules))
