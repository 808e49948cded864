"""KernelBenchX / TritonBench-style tasks (task.format "kernelbenchx").

Such a task file is a reference *function* (`def gelu(input, approximate='none')`), a
separator line of `#` characters (146 in KernelBenchX and TritonBench), then test code
that calls the function on fixed and random inputs and leaves a `test_results` dict. A
candidate supplies the same function (or `kernel_function`, as KernelBenchX accepts).

Here one "trial" is one run of the task's test code, right after seeding random, NumPy
and torch with the trial's seed, with the function's name bound to the side's function:
the reference's in the task host, the candidate's in the candidate child. The test
code always comes from the task file, never from the candidate (a candidate file's own
test part, after a separator, is dropped). `test_results` is flattened into named leaves
in a fixed order: tensors (and NumPy arrays and numbers, as tensors) go through the usual
output buffer and comparison; other values (strings, None, dtypes) travel inline and must
be equal. The judge (`leaf_mismatch`) fails a missing or extra leaf, or one of another
kind, with its name.

A timed call ("unit") is the function's calls that one run of the test code makes, in
order: the sum over the test's calls, as KernelBenchX sums its per-input-size timings
before dividing reference by candidate. The task host records them with the reference
function on the timed call's seed and hands their arguments over to the child through its
buffers, and judges what they return there (kbx_calls.py says how, and which calls are
left out)."""

import ast
import itertools
import linecache
import os
import sys
import types

import numpy as np
import torch

from kforge_harness.anticheat import buffers, observe
from kforge_harness import handover, protocol
from kforge_harness.tasks import kbx_calls
from kforge_harness.tasks.kbx_calls import CannotCross
from kforge_harness.tasks.runner import NoEntry, TaskSession, seed_everything
from kforge_harness.tasks.tasks import REFERENCE_MODULE

FORMAT = "kernelbenchx"
# A separator is a line of only '#', at least this long (KernelBenchX and TritonBench
# write 146): a shorter run of '#' is a comment banner a reference may well contain.
SEPARATOR_MIN = 80
RESULTS_NAME = "test_results"
# KernelBenchX's entry check accepts this name beside the task's own.
ALIAS = "kernel_function"
# Inline (non-tensor) leaves are compared as text of at most this many characters.
MAX_VALUE_CHARS = 4096
MAX_LEAVES = 4096
# [call, argument] pairs of in-place changes a report may list.
MAX_MUTATED = 4096


def _separator_index(lines):
    for index, line in enumerate(lines):
        text = line.strip()
        if len(text) >= SEPARATOR_MIN and set(text) == {"#"}:
            return index
    return None


def split_task(source, path):
    """(reference part, test part padded with blank lines so that its line numbers are
    the file's); a file without a separator is a task_error."""
    lines = source.splitlines(True)
    index = _separator_index(lines)
    if index is None:
        raise protocol.task_error(
            f"task file {path} has no separator line (a line of {SEPARATOR_MIN} or more '#') "
            "between the reference function and its test code: a kernelbenchx task is "
            "the function, the separator, then test code that fills test_results")
    return "".join(lines[:index]), "\n" * (index + 1) + "".join(lines[index + 1:])


def candidate_part(code):
    """The candidate's implementation: its file up to a separator, if it has one (a
    KernelBenchX candidate file may carry the test code too; the task's is the one run)."""
    lines = code.splitlines(True)
    index = _separator_index(lines)
    return code if index is None else "".join(lines[:index])


def defined_names(tree):
    """Module-level functions and names bound by assignment, in order."""
    names = []
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.append(stmt.name)
        elif isinstance(stmt, ast.Assign):
            names += [t.id for t in stmt.targets if isinstance(t, ast.Name)]
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            names.append(stmt.target.id)
    return names


def entry_name(reference_source, path):
    """The function the task is about: the one named like the file (KernelBenchX's rule),
    else the reference part's only function. Raises a task_error otherwise."""
    try:
        tree = ast.parse(reference_source, filename=path)
    except SyntaxError as exc:
        raise protocol.task_error(f"task file {path}:{exc.lineno} does not parse: {exc.msg}") from None
    stem = os.path.splitext(os.path.basename(path))[0]
    if stem in defined_names(tree):
        return stem
    functions = [s.name for s in tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if len(functions) == 1:
        return functions[0]
    raise protocol.task_error(
        f"task file {path} defines no function {stem}() before its separator and "
        f"{'no' if not functions else len(functions)} other function(s) "
        f"({', '.join(functions)}): name the reference function like the file")


# ---- test_results as named leaves ----

def _key_text(key):
    return key if isinstance(key, str) else repr(key)


def _as_leaf_tensor(value):
    """A tensor for a value compared numerically, else None (compared inline)."""
    if isinstance(value, torch.Tensor):
        value = value.detach()
        return value.to_dense() if value.layout != torch.strided else value
    if isinstance(value, (np.ndarray, np.generic)):
        return torch.from_numpy(np.ascontiguousarray(value))
    if isinstance(value, bool):
        return torch.tensor(value, dtype=torch.bool)
    if isinstance(value, int) and -(1 << 63) <= value < (1 << 63):
        return torch.tensor(value, dtype=torch.int64)
    if isinstance(value, float):
        return torch.tensor(value, dtype=torch.float64)
    if isinstance(value, complex):
        return torch.tensor(value, dtype=torch.complex128)
    return None


def _inline(value):
    if value is None or isinstance(value, str):
        text = value
    else:
        text = f"{type(value).__name__}: {value}"
    return text if text is None else text[:MAX_VALUE_CHARS]


# What a strictly flattened value's leaves may be (flatten(strict=True)): types whose
# reading runs no code of the value's own.
_PLAIN_LEAVES = (torch.Tensor, torch.nn.Parameter, np.ndarray, bool, int, float, complex, str,
                 type(None), torch.dtype)


def _plain(value):
    kind = type(value)
    return kind in _PLAIN_LEAVES or (isinstance(value, np.generic) and kind.__module__ == "numpy")


def _items(value):
    """A list's or tuple's items through list's and tuple's own methods (a subclass,
    torch.max's structseq or a namedtuple, as what it holds)."""
    if isinstance(value, tuple):
        return [tuple.__getitem__(value, i) for i in range(tuple.__len__(value))]
    return [list.__getitem__(value, i) for i in range(list.__len__(value))]


def flatten(results, root=RESULTS_NAME, strict=False):
    """(names, tensors, values): every leaf of `results` by its path
    ("test_results.case_1[0]"), dict keys sorted; the tensors of the numeric leaves, in
    order; {name: text or None} for the others. `strict` (what a timed call returned, read
    in the candidate's process after the clock stopped): containers are read through
    dict's, list's and tuple's own methods and every leaf and key must be of a plain type,
    else CannotCross: an object of the candidate's own would run its code when read."""
    names, tensors, values = [], [], {}
    _walk(results, root, strict, names, tensors, values)
    if len(names) > MAX_LEAVES:  # what the judge accepts from a candidate's process
        raise ValueError(f"{root} has {len(names)} leaves, more than the {MAX_LEAVES} "
                         "a comparison takes")
    return names, tensors, values


def _walk(value, name, strict, names, tensors, values):
    """flatten's walk (a module function: a closure that calls itself is a reference
    cycle, which keeps the tensors it gathered alive until the collector runs)."""
    if isinstance(value, dict):
        keys = list(dict.keys(value)) if strict else list(value)
        if strict and not all(key is None or type(key) in (bool, int, float, str) for key in keys):
            raise CannotCross(f"{name} has a key that is no plain value")
        for key in sorted(keys, key=_key_text):
            _walk(dict.__getitem__(value, key) if strict else value[key], f"{name}.{_key_text(key)}",
                  strict, names, tensors, values)
        return
    if isinstance(value, (list, tuple)):
        for index, item in enumerate(_items(value) if strict else value):
            _walk(item, f"{name}[{index}]", strict, names, tensors, values)
        return
    if strict and not _plain(value):
        raise CannotCross(f"{name} is a {kbx_calls.type_name(value)}")
    names.append(name)
    if strict and len(names) > MAX_LEAVES:
        raise CannotCross(f"{name}: more than {MAX_LEAVES} leaves")
    tensor = _as_leaf_tensor(value)
    if tensor is None:
        values[name] = _inline(value)
    else:
        tensors.append(tensor)


# ---- the sides and the session ----

class TestRun:
    """A trial's "inputs": one run of the task's test code on a seed. `calls`: the
    function's calls that run made (kbx_calls.Call), once recorded for timing."""

    def __init__(self, seed):
        self.seed = seed
        self.calls = None


class Replayed(list):
    """What a timed unit's calls returned, in order, and the calls' places in the test run
    (`indices`): the results are named after them."""

    def __init__(self, results, indices):
        super().__init__(results)
        self.indices = indices


class FunctionSide:
    """A function (the reference's or the candidate's) in the place of runner.Side. Its
    inputs are a trial's test run (the test code calls the function, KbxSession.observe)
    or a timed unit's calls (kbx_calls.LentUnit, or the arguments the task host checks a
    unit with), which calling it replays, in order."""

    def __init__(self, function, session):
        self.model = function
        self.session = session

    def feed(self, inputs):
        return inputs

    def __call__(self, unit):
        function, results = self.model, []
        for args, kwargs, grad in unit.calls:
            if grad:
                results.append(function(*args, **kwargs))
            else:  # the test called it under torch.no_grad
                with torch.no_grad():
                    results.append(function(*args, **kwargs))
        return Replayed(results, unit.indices)


class KbxSession(TaskSession):
    """A kernelbenchx task in this process: runner.TaskSession's steps in this format's
    terms (no Model, no get_inputs: the test code makes its own inputs)."""

    # A trial's inputs are made by the test code, in the process that runs it: they cannot
    # be scaled and shifted (reference.VARIATIONS).
    inputs_can_vary = False
    replays_calls = True

    def __init__(self, task, options, device):
        super().__init__(task, options, device)
        # Its master inputs are test runs, not tensors: like a NumPy task's, they have no
        # torch.compile baseline (the flag compile_baseline_unavailable says so).
        self.numpy_task = True
        self.entry = None
        self.test_code = None
        self.last_facts = {}
        self.fixed_calls = frozenset()  # keys of calls with the same arguments at every seed

    def load(self):
        task = self.task_spec
        path, source = task["path"], task["source"]
        reference, test = split_task(source, path)
        self.entry = entry_name(reference, path)
        try:
            self.test_code = compile(test, path, "exec")
        except SyntaxError as exc:
            raise protocol.task_error(f"task file {path}:{exc.lineno} does not parse: {exc.msg}") from None
        self.module = _load_reference(reference, path, source)
        self.sizes = {}

    def make_init_inputs(self):
        self.init_inputs = []

    def reference_class(self):
        return getattr(self.module, self.entry), FORMAT

    def candidate_entry(self, module):
        for name in (self.entry, ALIAS):
            function = getattr(module, name, None)
            if callable(function):
                return function, FORMAT
        raise NoEntry(f"the candidate defines no function {self.entry}() (or {ALIAS}()): "
                      f"the task's test code calls {self.entry}")

    def candidate_code(self, code):
        return candidate_part(code)

    def build(self, cls, kind):
        return FunctionSide(cls, self)

    def make_inputs(self, seed, transform=None):
        if transform is not None:  # reference.VARIATIONS: a test's own inputs cannot be scaled
            raise ValueError("a kernelbenchx task's inputs are its test code's: they cannot be "
                             "scaled and shifted")
        return [TestRun(seed)]

    def forward(self, side, inputs, seed):
        return self.observe(side, inputs, seed)[0]

    def observe(self, side, inputs, seed):
        """The test run's tensor leaves, the indices of the function's calls that changed
        a tensor argument in place, and [call, argument] of the first call whose result
        shares memory with an argument (or None): the anti-cheat observations, per call
        of the function rather than per input of a forward."""
        (run,) = inputs
        names, tensors, values, mutated, aliased = self.run_tests(side, run, record=False)
        self.last_facts = {"names": names, "values": values, "mutated": mutated}
        return tensors, sorted({call for call, _ in mutated}), aliased

    def output_facts(self):
        return dict(self.last_facts)

    def tensor_names(self):
        names, values = self.last_facts.get("names"), self.last_facts.get("values", {})
        return [name for name in names if name not in values] if names else None

    # ---- timing: the task host's side ----

    def plan_timing(self, side, seeds):
        """The units of two runs of the test code (two seeds), `side`'s function recording:
        a call whose arguments are the same in both is the same at every seed, and left
        out of every unit from now on (`fixed_calls`)."""
        runs = [self.record_calls(side, seed) for seed in seeds]
        keys = [{call.key for call in calls if call.key is not None} for calls in runs]
        self.fixed_calls = frozenset(keys[0] & keys[1])
        return [kbx_calls.Unit(calls, self.fixed_calls) for calls in runs]

    def timed_unit(self, side, seed):
        """The timed unit of a run of the test code on `seed` (kbx_calls.Unit)."""
        return kbx_calls.Unit(self.record_calls(side, seed), self.fixed_calls)

    def record_calls(self, side, seed):
        run = TestRun(seed)
        self.run_tests(side, run, record=True)
        return run.calls

    def replay_unit(self, side, unit, seed):
        """`side`'s function over a unit's calls as the child replayed them (fresh copies
        of the same arguments, after seeding with the unit's seed): (names, tensors,
        values) of what they returned, and {k: value} of the tensor arguments they
        changed in place, by their place in the unit's layout."""
        seed_everything(seed)
        arguments = unit.arguments(self.torch_device)
        names, tensors, values = _flatten_results(side(arguments))
        self.device.synchronize(torch)
        # Their values, as the comparison reads them (a lazily conjugated view's).
        results = names, [tensor.resolve_conj().resolve_neg() for tensor in tensors], values
        after = arguments.values()
        changed = {k: after[k] for k in buffers.differing(after, unit.copies, set())}
        return results, changed

    # ---- timing: the child's side ----

    def lend_inputs(self, mapping, described, host=None):
        """A timed unit's calls over the slot the task host fills (kbx_calls.LentUnit):
        the slot's views made now; taken, the calls rebuilt over them (`calls`, where
        given: a timed unit's, which its description sent ahead leaves out), their
        copies filled from the slot and the random generators seeded with the unit's
        seed, as the task host does before it checks the same unit."""
        layout = handover.Layout.from_json(described["layout"])
        views = handover.views(mapping, layout, arrays=False, host=host)

        def take(seed, copy, calls=None, made=None):
            unit = kbx_calls.LentUnit(views, layout, described["calls"] if calls is None else calls,
                                      self.torch_device)
            unit.fill(copy)
            seed_everything(seed)
            return unit
        # The unit's arguments come from the slot and the tape, copied and seeded with
        # the call's seed inside its bracket.
        take.makes_inputs, take.at_prepare = False, False
        take.premake = lambda: None
        return take

    def output_leaves(self, out):
        """The tensor leaves of a trial's test_results (already flat), or of what a
        timed unit's calls returned (Replayed), read strictly: CannotCross when a result
        holds an object that is no plain value."""
        if not isinstance(out, Replayed):
            return super().output_leaves(out)
        names, tensors, values = _flatten_results(out)
        self.last_facts = {"names": names, "values": values}
        return tensors

    def release_inputs(self, inputs, copy):
        if isinstance(inputs, kbx_calls.LentUnit):
            inputs.write_back(copy)

    def run_tests(self, side, run, record):
        """Runs the test code with the task's name bound to the side's function; returns
        flatten(test_results), the [call, argument] pairs of the tensor arguments a call
        changed in place, and [call, argument] of the first call whose result shares
        memory with an argument (or None); no observations with `record`, which records
        the calls into `run` instead (kbx_calls.capture), for timing."""
        function = side.model
        calls, mutated, aliased = [], [], []
        counter = itertools.count()

        def recorded(*args, **kwargs):
            call = kbx_calls.capture(next(counter), args, kwargs, self.torch_device)
            calls.append(call)
            try:
                out = function(*args, **kwargs)
            except BaseException as exc:  # a test may call it on purpose with bad arguments
                call.reason = f"the reference raised {type(exc).__name__} (a call not to time)"
                raise
            try:
                call.returned(flatten(out, f"call #{call.index}", strict=True))
            except CannotCross as exc:
                call.returned(exc)
            return out

        def watched(*args, **kwargs):
            index = next(counter)
            arguments = observe.tensors_in([list(args), dict(kwargs)])
            before = observe.input_digests(arguments)
            out = function(*args, **kwargs)
            after = observe.input_digests(arguments)
            mutated.extend([index, position] for position in observe.changed_inputs(before, after))
            shared = observe.aliasing(out, arguments) if not aliased else None
            if shared is not None:
                aliased.extend([index, shared[1]])
            return out

        namespace = dict(vars(self.module))
        namespace.update(__name__="__main__", __file__=self.task_spec["path"])
        namespace[self.entry] = recorded if record else watched
        seed_everything(run.seed)
        exec(self.test_code, namespace)  # noqa: S102 - the task's own test code
        self.device.synchronize(torch)
        if RESULTS_NAME not in namespace:
            raise NameError(f"the task's test code left no {RESULTS_NAME}")
        if record:
            run.calls = calls
        return (*flatten(namespace[RESULTS_NAME]), mutated, aliased or None)


def _flatten_results(results):
    """flatten(strict=True) of each result of a Replayed, named after its call, joined."""
    names, tensors, values = [], [], {}
    for index, result in zip(results.indices, results):
        flattened = flatten(result, f"call #{index}", strict=True)
        names += flattened[0]
        tensors += flattened[1]
        values.update(flattened[2])
    return names, tensors, values


def _load_reference(reference, path, source):
    """The reference part executed as the task's module, under the task's file name (its
    lines in linecache, so tracebacks show the real file's)."""
    linecache.cache[path] = (len(source), None, source.splitlines(True), path)
    module = types.ModuleType(REFERENCE_MODULE)
    module.__file__ = path
    sys.modules[REFERENCE_MODULE] = module
    exec(compile(reference, path, "exec"), module.__dict__)  # noqa: S102 - the task is the reference
    return module


# ---- the judge's part ----

def _valid_facts(report):
    names, values = report.get("names"), report.get("values")
    if (not isinstance(names, list) or len(names) > MAX_LEAVES
            or not all(isinstance(n, str) and len(n) <= MAX_VALUE_CHARS for n in names)
            or len(set(names)) != len(names)):
        return None
    if not isinstance(values, dict) or not all(
            k in names and (v is None or (isinstance(v, str) and len(v) <= MAX_VALUE_CHARS))
            for k, v in values.items()):
        return None
    return names, values


def _shown(value):
    return "None" if value is None else repr(value[:80])


def _valid_mutated(report):
    mutated = report.get("mutated", [])
    if (not isinstance(mutated, list) or len(mutated) > MAX_MUTATED
            or not all(isinstance(pair, list) and len(pair) == 2
                       and all(type(i) is int for i in pair) for pair in mutated)):
        return None
    return mutated


def leaf_mismatch(reference, report, what=RESULTS_NAME):
    """(error_class, message) when the candidate changed in place an argument of a call
    that the reference's same call leaves unchanged (the test's calls are compared one by
    one: an optimizer step may update its parameter, not the gradient it is given), when
    its test_results (`what`: a timed unit's results) does not have the reference's
    leaves, or an inline leaf differs; else None."""
    names, values = reference["names"], reference["values"]
    facts, mutated = _valid_facts(report), _valid_mutated(report)
    if facts is None or mutated is None:
        return protocol.RUNTIME_ERROR, "the candidate's process handed over malformed leaf names"
    allowed = {tuple(pair) for pair in reference.get("mutated", [])}
    for call, argument in mutated:
        if (call, argument) not in allowed:
            return (protocol.CHEAT_DETECTED,
                    f"call #{call} of the function by the test code: the candidate changed its "
                    f"tensor argument #{argument} in place; the reference's same call leaves "
                    "it unchanged")
    cand_names, cand_values = facts
    missing = [n for n in names if n not in cand_names]
    extra = [n for n in cand_names if n not in names]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"lacks {', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}")
        if extra:
            parts.append(f"has {', '.join(extra[:5])}{' ...' if len(extra) > 5 else ''} "
                         "the reference's has not")
        return protocol.SHAPE_MISMATCH, f"the candidate's {what} {' and '.join(parts)}"
    if cand_names != names:
        return protocol.SHAPE_MISMATCH, f"the candidate's {what} has its leaves in another order"
    for name in names:
        if (name in values) != (name in cand_values):
            kinds = ("a tensor or number", "a value of another kind")
            mine, theirs = (kinds[1], kinds[0]) if name in cand_values else kinds
            return protocol.DTYPE_MISMATCH, f"{name} is {mine}; the reference's is {theirs}"
        if name in values and values[name] != cand_values[name]:
            return (protocol.NUMERICAL_MISMATCH,
                    f"{name} is {_shown(cand_values[name])}, the reference's {_shown(values[name])}")
    return None


def tensor_names(reference):
    """The names of the reference's tensor leaves, in output-file order."""
    return [n for n in reference["names"] if n not in reference["values"]]
