"""Loading KernelBench-format tasks (sizes rewritten, see sizes.py) and candidates."""

import ast
import importlib.util
import os
import sys
import types

from . import protocol
from .sizes import rewrite_sizes

REFERENCE_MODULE = "kforge_reference"
CANDIDATE_MODULE = "kforge_candidate"
CANDIDATE_FILE = CANDIDATE_MODULE + ".py"


def read_task_source(path):
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError as exc:
        raise protocol.harness_error(f"cannot read task file {path}: {exc.strerror}") from exc


def parse_task(path):
    source = read_task_source(path)
    try:
        return ast.parse(source, filename=path)
    except SyntaxError as exc:
        raise protocol.harness_error(
            f"task file {path}:{exc.lineno} does not parse: {exc.msg}") from exc


def load_task(task):
    """Executes the task file with its sizes rewritten; returns (module, size changes).

    The module is compiled from the rewritten AST under the task's own file name, so
    tracebacks and inspect point at the real file and its real line numbers."""
    path = task["path"]
    tree = parse_task(path)
    try:
        changes = rewrite_sizes(tree, task["sizes"], task["size_scale"], where=path)
    except ValueError as exc:
        raise protocol.harness_error(str(exc)) from exc
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
        raise protocol.harness_error(
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
