"""Loading KernelBench-format tasks (sizes rewritten, see sizes.py) and candidates.

A task is loaded from its source text, which the server reads once and hands to every
process that needs it: a candidate's child needs nothing outside its own directory."""

import ast
import importlib.util
import linecache
import os
import sys
import types

from kforge_harness import protocol
from kforge_harness.tasks.sizes import module_sizes, rewrite_sizes

REFERENCE_MODULE = "kforge_reference"
CANDIDATE_MODULE = "kforge_candidate"
CANDIDATE_FILE = CANDIDATE_MODULE + ".py"


def read_task_source(path):
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError as exc:
        raise protocol.task_error(f"cannot read task file {path}: {exc.strerror}") from exc


def parse_task(path, source=None):
    """The task's AST; a file that does not parse is a task_error."""
    if source is None:
        source = read_task_source(path)
    try:
        return ast.parse(source, filename=path)
    except SyntaxError as exc:
        raise protocol.task_error(f"task file {path}:{exc.lineno} does not parse: {exc.msg}") from None


def rewritten(task, source):
    """(the task's AST with its sizes rewritten, the size changes)."""
    path = task["path"]
    tree = parse_task(path, source)
    try:
        return tree, rewrite_sizes(tree, task["sizes"], task["size_scale"], where=path)
    except ValueError as exc:
        raise protocol.task_error(str(exc)) from None


def run_sizes(task, source=None):
    """Every module-level integer constant of the task at its rewritten sizes."""
    return module_sizes(rewritten(task, source)[0])


def load_task(task, source=None):
    """Executes the task's `source` (default: its file) with its sizes rewritten;
    returns (module, size changes). A task that cannot load (it does not parse, names an
    unknown size, lacks Model) is a task_error (protocol.Verdict); what the task's own
    code raises (a failed import, say) propagates.

    The module is compiled from the rewritten AST under the task's own file name, so
    tracebacks point at the real file and its real line numbers; its lines are put in
    linecache, so tracebacks show them even where the file cannot be read."""
    path = task["path"]
    if source is None:
        source = read_task_source(path)
    tree, changes = rewritten(task, source)
    linecache.cache[path] = (len(source), None, source.splitlines(True), path)
    module = types.ModuleType(REFERENCE_MODULE)
    module.__file__ = path
    sys.modules[REFERENCE_MODULE] = module
    exec(compile(tree, path, "exec"), module.__dict__)  # noqa: S102 - the task is the reference
    # A MindSpore task may lack Model where MindSpore is missing, if it has TorchModel.
    model_names = ("Model", "TorchModel") if task.get("format") == "kernelbench-mindspore" else ("Model",)
    missing = [name for name in ("get_inputs",) if not hasattr(module, name)]
    if not any(hasattr(module, name) for name in model_names):
        missing.insert(0, " or ".join(model_names))
    if missing:
        raise protocol.task_error(
            f"task file {path} lacks {', '.join(missing)}: a KernelBench task defines "
            "class Model, get_inputs() and get_init_inputs()")
    if not hasattr(module, "get_init_inputs"):
        module.get_init_inputs = lambda: []
    return module, changes


def write_candidate(code, workdir):
    """Writes the candidate to a real file: Triton's @jit reads kernel source from disk."""
    path = os.path.join(workdir, CANDIDATE_FILE)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(code)
    return path


def import_candidate(path):
    spec = importlib.util.spec_from_file_location(CANDIDATE_MODULE, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[CANDIDATE_MODULE] = module
    spec.loader.exec_module(module)
    return module
