"""The L1 static check: syntax, ModelNew and its constructor, DSL compliance, anti-cheat
rules. Nothing of the candidate is executed: everything is read from its AST and from the
native source text its strings carry.

Rules live in YAML (rules/default.yaml beside this package, extended by the request's
options.rules_file). A rule names a `kind`, a matcher implemented here; the file gives it
its id, message, fix hint, languages, scope and the names it matches. README.md lists the
kinds and their semantics."""

import ast
import fnmatch
import functools
import os
import re

import yaml

from kforge_harness import HARNESS_DIR
from kforge_harness.tasks import kbx, tasks
from kforge_harness import protocol
from kforge_harness.l1.analysis import (CPP_LOADERS, CUDA_LOADERS, MODEL_NEW, Cls, Func, Inst,
                                        Instance, Launcher, Mod, ModuleFacts, Native, Opaque, dotted)
from kforge_harness.l1.native_source import looks_native, native_texts

DEFAULT_RULES_PATH = os.path.join(HARNESS_DIR, "rules", "default.yaml")

# The largest candidate L1 reads, in characters: candidates, inline CUDA included, are
# tens of KB (the largest bundled one 7 KB). Python's parser spends up to 35 s and
# 300 MB on a MB of pathological code (a chain of 340K comparisons, measured on the
# loaded 2-core VM): at 256K characters a check stays within seconds, far inside a
# request's time and memory limits.
MAX_SOURCE_CHARS = 1 << 18

SCOPES = ("module", "candidate", "forward")
NATIVE_LOADERS = CPP_LOADERS + ("torch.utils.cpp_extension.load_inline",)
NATIVE_SOURCE_ARGUMENTS = ("cpp_sources", "cuda_sources", "cpp_source")
SEVERITIES = ("error", "warning")

_OPERATORS = {"@": ast.MatMult, "+": ast.Add, "-": ast.Sub, "*": ast.Mult, "/": ast.Div,
              "//": ast.FloorDiv, "%": ast.Mod, "**": ast.Pow}


# ---- patterns ----

def path_matches(path, pattern):
    """Dotted-name glob: `*` matches within one segment, `**` any number of segments
    (none included): `torch.**` matches torch and all below it, `torch.nn.[A-Z]*` the
    classes directly in torch.nn, `os.spawn*` os.spawnl but not os.path.x."""
    return _segments_match(path.split("."), pattern.split("."))


def _segments_match(parts, patterns):
    if not patterns:
        return not parts
    if patterns[0] == "**":
        return any(_segments_match(parts[i:], patterns[1:]) for i in range(len(parts) + 1))
    return bool(parts) and fnmatch.fnmatchcase(parts[0], patterns[0]) and \
        _segments_match(parts[1:], patterns[1:])


def _is_namespace_of(path, pattern):
    """Whether `path` is a strict prefix of names `pattern` matches (`torch.nn` of
    `torch.nn.[A-Z]*`): referring to it is referring to a namespace, not to a leaf."""
    parts, patterns = path.split("."), pattern.split(".")
    for index, part in enumerate(parts):
        if index >= len(patterns):
            return False
        if patterns[index] == "**":
            return True
        if not fnmatch.fnmatchcase(part, patterns[index]):
            return False
    return len(patterns) > len(parts)


def _cpp_to_dotted(name):
    return name.replace("::", ".")


class Rule:
    FIELDS = ("id", "kind", "message", "hint", "languages", "scope", "match", "allow",
              "options", "severity", "enabled")

    def __init__(self, spec, where):
        unknown = set(spec) - set(self.FIELDS)
        if unknown:
            raise ValueError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}; "
                             f"a rule has {', '.join(self.FIELDS)}")
        for required in ("id", "kind", "message"):
            if not isinstance(spec.get(required), str):
                raise ValueError(f"{where}: '{required}' must be a string")
        self.id = spec["id"]
        self.kind = spec["kind"]
        if self.kind not in MATCHERS:
            raise ValueError(f"{where} ({self.id}): unknown kind {self.kind!r}; kinds are "
                             f"{', '.join(sorted(MATCHERS))}")
        self.message = spec["message"]
        self.hint = spec.get("hint", "")
        self.languages = tuple(spec.get("languages", protocol.LANGUAGES))
        self.scope = spec.get("scope", "candidate")
        self.match = _flat_strings(spec.get("match", []))
        self.allow = _flat_strings(spec.get("allow", []))
        self.options = spec.get("options", {})
        self.severity = spec.get("severity", "error")
        self.enabled = bool(spec.get("enabled", True))
        if self.scope not in SCOPES:
            raise ValueError(f"{where} ({self.id}): scope must be one of {', '.join(SCOPES)}")
        if self.severity not in SEVERITIES:
            raise ValueError(f"{where} ({self.id}): severity must be error or warning")
        if not isinstance(self.options, dict):
            raise ValueError(f"{where} ({self.id}): options must be a mapping")
        bad = [lang for lang in self.languages if lang not in protocol.LANGUAGES]
        if bad:
            raise ValueError(f"{where} ({self.id}): unknown language(s) {', '.join(bad)}")
        self.regexes = []
        if self.kind in REGEX_KINDS:
            try:
                self.regexes = [re.compile(p) for p in self.match]
                self.allow_regexes = [re.compile(p) for p in self.allow]
            except re.error as exc:
                raise ValueError(f"{where} ({self.id}): bad regular expression "
                                 f"{exc.pattern!r}: {exc}") from None

    def matches(self, name):
        return (name is not None and any(path_matches(name, p) for p in self.match)
                and not any(path_matches(name, p) for p in self.allow))

    def is_namespace(self, path):
        return any(_is_namespace_of(path, p) for p in self.allow)

    def option_list(self, key):
        return _flat_strings(self.options.get(key, []))


def _flat_strings(items):
    """A list of strings, nested lists flattened (a YAML alias of a shared list may sit
    among further entries: allow: [*plumbing, more])."""
    if not isinstance(items, list):
        return [str(items)]
    return [s for item in items for s in (_flat_strings(item) if isinstance(item, list)
                                          else [str(item)])]


def _read_rules(path):
    """The rules of one file; cached while the file is unchanged (the built-in rules are
    read once per process)."""
    try:
        stat = os.stat(path)
    except OSError as exc:
        raise ValueError(f"cannot read rules file {path}: {exc.strerror}") from None
    return _parse_rules(path, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=16)
def _parse_rules(path, mtime_ns, size):
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        raise ValueError(f"cannot read rules file {path}: {exc.strerror}") from None
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
    try:
        root = loader.get_single_node()  # nodes keep their file positions
        document = loader.construct_document(root) if root is not None else None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else path
        problem = getattr(exc, "problem", None) or str(exc)
        raise ValueError(f"{where}: the rules file is not valid YAML: {problem}") from None
    finally:
        loader.dispose()
    if not isinstance(document, dict) or not isinstance(document.get("rules"), list):
        raise ValueError(f"rules file {path} must be a mapping with a 'rules' list")
    rule_nodes = next(value.value for key, value in root.value if key.value == "rules")
    rules = []
    for index, spec in enumerate(document["rules"]):
        mark = rule_nodes[index].start_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}: rule #{index + 1}"
        rules.append(Rule(spec if isinstance(spec, dict) else {}, where))
    return tuple(rules)


def load_rules(extra_path=None):
    """The built-in rules, then the user's: a user rule with a built-in id replaces it in
    place (`enabled: false` switches it off), other user rules are added at the end."""
    rules = {rule.id: rule for rule in _read_rules(DEFAULT_RULES_PATH)}
    if extra_path:
        for rule in _read_rules(extra_path):
            rules[rule.id] = rule
    return [rule for rule in rules.values() if rule.enabled]


# ---- matchers: (facts, rule, context) -> iterable of (node or (line, col), matched) ----

def _scope_nodes(facts, rule):
    if rule.scope == "module":
        return facts.module_nodes()
    if rule.scope == "candidate":
        return facts.candidate_nodes()
    return facts.forward_nodes()


def _calls(facts, rule):
    return [node for node in _scope_nodes(facts, rule) if isinstance(node, ast.Call)]


def _match_use(facts, rule, context):
    """Any use of a dotted name that resolves into a module or the builtins (a call, a
    reference, an alias, an argument): what `torch.relu` names however it is spelled."""
    for node in _scope_nodes(facts, rule):
        if context["value_uses"](node):
            for value in facts.values(node):
                if isinstance(value, Mod) and rule.matches(value.path) \
                        and not rule.is_namespace(value.path):
                    yield node, value.path


def _match_method(facts, rule, context):
    """Calls of a method of a value L1 cannot type (a tensor, an array, a call's result):
    `name` must match `match` and not `allow`."""
    for node in _calls(facts, rule):
        for value in facts.values(node.func):
            if isinstance(value, Opaque) and value.attr is not None and rule.matches(value.attr):
                yield node.func, "." + value.attr


def _match_unresolved_call(facts, rule, context):
    """Calls of something L1 cannot resolve at all (a parameter, an opaque object)."""
    for node in _calls(facts, rule):
        if Opaque() in facts.values(node.func):
            yield node.func, ast.unparse(node.func)[:60]


def _match_module_call(facts, rule, context):
    """Calls of an object built from a library class matching `match` (torch.nn layers),
    or of its forward/__call__: the layer computes, not a kernel."""
    for node in _calls(facts, rule):
        for value in facts.values(node.func):
            if isinstance(value, Instance) and rule.matches(value.path):
                yield node.func, value.path
            elif isinstance(value, Opaque) and value.owner and rule.matches(value.owner) \
                    and value.attr in ("forward", "__call__", "_call_impl"):
                yield node.func, f"{value.owner}.{value.attr}"


def _match_base_class(facts, rule, context):
    """Classes of the candidate deriving from a library class matching `match` and not
    `allow`, or from something L1 cannot resolve."""
    for node in _scope_nodes(facts, rule):
        if isinstance(node, ast.ClassDef):
            for base in node.bases:
                for value in facts.values(base):
                    if isinstance(value, Mod) and rule.matches(value.path):
                        yield base, value.path
                    elif not isinstance(value, (Mod, Cls)):
                        yield base, ast.unparse(base)[:60]


def _match_reference_use(facts, rule, context):
    """Names and attributes spelled like the reference class (`Model`), and names bound
    to an imported `...Model` under another name (`from task import Model as M`)."""
    for node in _scope_nodes(facts, rule):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in rule.match:
            yield node, node.id
        elif isinstance(node, ast.Attribute) and node.attr in rule.match:
            yield node, node.attr
        elif context["value_uses"](node):
            for value in facts.values(node):
                if isinstance(value, Mod) and value.path.rpartition(".")[2] in rule.match:
                    yield node, value.path


def _attribute_accesses(facts, nodes):
    """(node, name) for `x.name` in any context and getattr/setattr/hasattr/delattr with a
    name that folds to a constant."""
    for node in nodes:
        if isinstance(node, ast.Attribute):
            yield node, node.attr
        else:
            folded = facts.folded_attribute_call(node)
            if folded is not None and folded[1] is not None:
                yield node, folded[1]


def _match_attribute_name(facts, rule, context):
    """Attribute accesses by a name matching `match` and not `allow`, on anything."""
    for node, name in _attribute_accesses(facts, _scope_nodes(facts, rule)):
        if rule.matches(name):
            yield node, name


def _match_dunder(facts, rule, context):
    """Double-underscore attributes (x.__matmul__, getattr(x, "__dict__")) and names
    (__builtins__) matching `match` and not `allow`."""
    nodes = _scope_nodes(facts, rule)
    yield from _match_attribute_name(facts, rule, context)
    for node in nodes:
        if isinstance(node, ast.Name) and node.id.startswith("__") and rule.matches(node.id):
            yield node, node.id


def _match_dynamic_attribute(facts, rule, context):
    """getattr/setattr/hasattr/delattr whose name does not fold to a constant (on
    anything but a loaded native library, whose functions may be picked by name)."""
    for node in _calls(facts, rule):
        folded = facts.folded_attribute_call(node)
        if folded is not None and folded[1] is None:
            receivers = facts.values(folded[0])
            if not all(isinstance(v, Native) for v in receivers):
                yield node, f"{node.func.id}({ast.unparse(folded[0])[:40]}, ...)"


def _match_operator(facts, rule, context):
    wanted = tuple(_OPERATORS[symbol] for symbol in rule.match if symbol in _OPERATORS)
    for node in _scope_nodes(facts, rule):
        if isinstance(node, (ast.BinOp, ast.AugAssign)) and isinstance(node.op, wanted):
            symbol = next(s for s, cls in _OPERATORS.items() if isinstance(node.op, cls))
            yield node, symbol


def _match_try(facts, rule, context):
    try_types = tuple(t for t in (ast.Try, getattr(ast, "TryStar", None)) if t)
    for node in _scope_nodes(facts, rule):
        if isinstance(node, try_types):
            yield node, "try"


def _match_import(facts, rule, context):
    """Imports of modules matching `match` and not `allow`; a star import of a matching
    module always (the names it binds cannot be known)."""
    for node in _scope_nodes(facts, rule):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if rule.matches(alias.name):
                    yield node, alias.name
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            star = any(alias.name == "*" for alias in node.names)
            if rule.matches(module) or (star and any(path_matches(module, p)
                                                     for p in rule.match)):
                yield node, module + (".*" if star else "")


def _match_assign(facts, rule, context):
    """Assignments to attributes of imported modules (time.perf_counter = ...,
    torch.cuda.Event.elapsed_time = ..., setattr(torch.cuda, "synchronize", f))."""
    for node in _scope_nodes(facts, rule):
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Delete):
            targets = node.targets
        for target in targets:
            if isinstance(target, ast.Attribute):
                yield from _module_attributes(facts, rule, target, target.value, target.attr)
        folded = facts.folded_attribute_call(node)
        if folded is not None and node.func.id in ("setattr", "delattr") and folded[1]:
            yield from _module_attributes(facts, rule, node, folded[0], folded[1])


def _module_attributes(facts, rule, node, receiver, name):
    for value in facts.values(receiver):
        if isinstance(value, Mod) and rule.matches(f"{value.path}.{name}"):
            yield node, f"{value.path}.{name}"


def _match_mask_index(facts, rule, context):
    """Indexing with a boolean mask (y[y < 0] = 0, x[mask] with mask = x > 0): torch
    selects or writes the elements, not a kernel."""
    for node in _scope_nodes(facts, rule):
        if isinstance(node, ast.Subscript):
            parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if any(_is_mask(facts, part, 0) for part in parts):
                yield node, ast.unparse(node)[:60]


def _is_mask(facts, node, depth):
    if isinstance(node, ast.Compare) or (isinstance(node, ast.UnaryOp)
                                         and isinstance(node.op, ast.Invert)):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.BitAnd, ast.BitOr, ast.BitXor)):
        return _is_mask(facts, node.left, depth + 1) or _is_mask(facts, node.right, depth + 1)
    if isinstance(node, ast.Name) and depth < 8:
        return any(_is_mask(facts, value, depth + 1) for value in facts.assigned_exprs(node))
    return False


def _match_rearrange_copy(facts, rule, context):
    """A materialising method (`match`: contiguous, clone, ...) applied to a rearranged
    view (`options.rearrange`: permute, transpose, .T, expand, ...; through
    `options.views`): torch moves the data into the new layout, not a kernel. For
    `copy_` the argument is what is checked."""
    rearrange = set(rule.option_list("rearrange"))
    views = set(rule.option_list("views"))
    for node in _calls(facts, rule):
        if isinstance(node.func, ast.Attribute) and rule.matches(node.func.attr):
            sources = node.args[:1] if node.func.attr.endswith("_") else [node.func.value]
            if any(_is_rearranged(facts, s, rearrange, views, 0) for s in sources):
                yield node.func, "." + node.func.attr


def _is_rearranged(facts, node, rearrange, views, depth):
    if depth > 12:
        return False
    if isinstance(node, ast.Attribute):
        return node.attr in rearrange or (
            node.attr in views and _is_rearranged(facts, node.value, rearrange, views, depth + 1))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr in rearrange:
            return True
        if node.func.attr in views:
            return _is_rearranged(facts, node.func.value, rearrange, views, depth + 1)
    if isinstance(node, ast.Subscript):
        return _is_rearranged(facts, node.value, rearrange, views, depth + 1)
    if isinstance(node, ast.Name):
        return any(_is_rearranged(facts, value, rearrange, views, depth + 1)
                   for value in facts.assigned_exprs(node))
    return False


def _match_forward_output(facts, rule, context):
    """What ModelNew.forward returns must come out of a kernel: a native function's or
    a Triton launch's result, or a buffer handed to one (or to the candidate's own
    function), possibly through `options.views`; or a buffer only allocated
    (`options.allocations`); not torch arithmetic on inputs, not a stored table."""
    forward = facts.forward_function()
    if forward is None:
        return
    provenance = _Provenance(facts, set(rule.option_list("views")),
                             set(rule.option_list("allocations")))
    for node in facts.own_nodes(forward):
        if isinstance(node, ast.Return) and node.value is not None:
            for part in provenance.unwritten(node.value, forward, {}, 0):
                yield part, ast.unparse(part)[:60]


class _Provenance:
    """Where forward's result comes from. A buffer that is only allocated and never
    written is not reported: that is a bug L3 finds (poisoned memory, a wrong result),
    not torch doing the work."""

    def __init__(self, facts, views, allocations):
        self.facts = facts
        self.views = views
        self.allocations = allocations
        self._written = {}

    def _allocation(self, call):
        values = self.facts.values(call.func)
        return values and all(
            (isinstance(v, Mod) and v.path in self.allocations) or
            (isinstance(v, Opaque) and v.attr in self.allocations) for v in values)

    def _kernel_callee(self, call):
        return any(isinstance(v, (Launcher, Func, Cls, Inst)) or
                   (isinstance(v, Native) and v.function) for v in self.facts.values(call.func))

    def written(self, fn):
        """Names (and dotted attribute chains) handed to a kernel, a native function or
        the candidate's own code anywhere in `fn`."""
        if id(fn) not in self._written:
            names = set()
            for node in ast.walk(fn):
                if isinstance(node, ast.Call) and self._kernel_callee(node):
                    for arg in node.args + [k.value for k in node.keywords]:
                        names.update(d for d in map(dotted, ast.walk(arg)) if d)
            self._written[id(fn)] = names
        return self._written[id(fn)]

    def torch_written(self, fn):
        """Names torch writes into in `fn` without a kernel: `y.copy_(expr)` and
        `y[...] = expr` with an expression that is not a constant."""
        names = set()
        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr == "copy_" and isinstance(node.func.value, ast.Name):
                names.add(node.func.value.id)
            elif isinstance(node, ast.Assign) and not isinstance(node.value, ast.Constant):
                names.update(t.value.id for t in node.targets if isinstance(t, ast.Subscript)
                             and isinstance(t.value, ast.Name))
        return names

    def unwritten(self, node, fn, arguments, depth):
        """The parts of `node` (returned from `fn`) that no kernel wrote."""
        if isinstance(node, ast.Constant):
            return []
        if depth > 8:
            return [node]
        if isinstance(node, (ast.Tuple, ast.List)):
            return [p for e in node.elts for p in self.unwritten(e, fn, arguments, depth + 1)]
        if isinstance(node, ast.IfExp):
            return self.unwritten(node.body, fn, arguments, depth + 1) + \
                self.unwritten(node.orelse, fn, arguments, depth + 1)
        if isinstance(node, ast.Subscript):
            return self.unwritten(node.value, fn, arguments, depth + 1)
        name = dotted(node)
        if name is not None:
            if name in self.written(fn):
                return []
            if isinstance(node, ast.Name):
                if node.id in self.torch_written(fn):
                    return [node]
                if node.id in arguments:
                    caller_node, caller = arguments[node.id]
                    return [node] if self.unwritten(caller_node, caller, {}, depth + 1) else []
                exprs = self.facts.assigned_exprs(node, complete=True)
                if exprs and all(not self.unwritten(e, fn, arguments, depth + 1) for e in exprs):
                    return []
            return [node]
        if isinstance(node, ast.Call):
            if self._allocation(node):
                return []  # filled by torch? then the name it is bound to says so
            values = self.facts.values(node.func)
            if any(isinstance(v, Launcher) or (isinstance(v, Native) and v.function)
                   for v in values):
                return []
            helpers = [v.node for v in values if isinstance(v, Func)] + [
                m for v in values if isinstance(v, Inst)
                for m in (self.facts.method(v.node, "__call__") or
                          self.facts.method(v.node, "forward"),) if m is not None]
            if helpers and all(not self._helper_unwritten(h, node, fn, depth) for h in helpers):
                return []
            if isinstance(node.func, ast.Attribute) and node.func.attr in self.views:
                return [node] if self.unwritten(node.func.value, fn, arguments, depth + 1) \
                    else []
        return [node]

    def _helper_unwritten(self, helper, call, caller, depth):
        if isinstance(helper, ast.Lambda):
            return self.unwritten(helper.body, helper, {}, depth + 1)
        params = [a.arg for a in helper.args.posonlyargs + helper.args.args]
        if params and params[0] in ("self", "cls", "ctx"):
            params = params[1:]
        arguments = {p: (a, caller) for p, a in zip(params, call.args)}
        arguments.update({k.arg: (k.value, caller) for k in call.keywords if k.arg in params})
        parts = []
        for node in self.facts.own_nodes(helper):
            if isinstance(node, ast.Return) and node.value is not None:
                parts += self.unwritten(node.value, helper, arguments, depth + 1)
        return parts


# ---- string and native source matchers ----

def _texts(facts, rule, native_only):
    """The candidate's strings in the rule's scope; with `native_only`, those that are C,
    C++ or CUDA source: they read as such (an include, __global__, extern "C", a torch
    C++ namespace), or they are part of what a native loader is given."""
    texts = native_texts(facts, _scope_nodes(facts, rule))
    if not native_only:
        return texts
    given = [facts.resolve_strings(source) for call in _loader_calls(facts, NATIVE_LOADERS)
             for source in call.args[:1] + [k.value for k in call.keywords
                                            if k.arg in NATIVE_SOURCE_ARGUMENTS]]
    given = [text for text in given if text]
    return [t for t in texts if looks_native(t.text) or any(t.raw in g for g in given)]


def _match_string_pattern(facts, rule, context):
    """Regular expressions (`match`) over the text of the strings the candidate spells
    out -- all of them (paths, flags, names), or with `options.native_only` only native
    source -- C/C++ comments blanked; a match where an `allow` expression also matches is
    skipped."""
    for text in _texts(facts, rule, bool(rule.options.get("native_only"))):
        for regex in rule.regexes:
            for found in regex.finditer(text.text):
                if not any(a.match(text.text, found.start()) for a in rule.allow_regexes):
                    yield text.position(found.start()), found.group(0).strip()[:60]


def _match_native_call(facts, rule, context):
    """In native source: namespace-qualified calls (torch::relu, at::mm) matching `match`
    and not `allow` (written with ::), and, with `options.tensor_methods`, member calls
    named like a torch.Tensor method of the installed torch that `options.method_allow`
    does not list (x.clamp_min(0) in the launcher)."""
    texts = _texts(facts, rule, native_only=True)
    methods = _tensor_method_names(rule) if texts and rule.options.get("tensor_methods") \
        else set()  # reading torch.Tensor costs an import of torch where none was made
    for text in texts:
        for offset, name in text.qualified_calls():
            dotted_name = _cpp_to_dotted(name)
            if any(path_matches(dotted_name, _cpp_to_dotted(p)) for p in rule.match) and \
                    not any(path_matches(dotted_name, _cpp_to_dotted(p)) for p in rule.allow):
                yield text.position(offset), name
        for offset, name in text.member_calls():
            if name in methods:
                yield text.position(offset), "." + name


@functools.lru_cache(maxsize=1)
def _torch_tensor_attributes():
    try:
        import torch
    except ImportError:
        return frozenset()
    return frozenset(name for name in dir(torch.Tensor) if not name.startswith("_"))


def _tensor_method_names(rule):
    """torch.Tensor's public methods (of the torch this harness runs) that the rule does
    not allow; none when torch cannot be imported."""
    return _torch_tensor_attributes() - set(rule.option_list("method_allow"))


def _match_native_source_unresolved(facts, rule, context):
    """Native code L1 cannot read: a source handed to a loader matching `match` (its
    first positional argument, cpp_source(s), cuda_sources) that does not fold to a
    string, or any call of a loader matching `options.file_loaders` (it compiles files,
    whose content L1 never sees)."""
    file_loaders = rule.option_list("file_loaders")
    for node in _calls(facts, rule):
        paths = [v.path for v in facts.values(node.func) if isinstance(v, Mod)]
        if any(path_matches(p, pattern) for p in paths for pattern in file_loaders):
            yield node.func, paths[0]
        elif any(rule.matches(p) for p in paths):
            sources = node.args[:1] + [k.value for k in node.keywords
                                       if k.arg in NATIVE_SOURCE_ARGUMENTS]
            for source in sources:
                if facts.resolve_strings(source) is None:
                    yield source, ast.unparse(source)[:60]


# ---- structural matchers: what a candidate of a language must contain ----

def _match_modelnew_present(facts, rule, context):
    if facts.entry is None and facts.model_new is None:
        yield (1, 1), MODEL_NEW


def _match_entry_function(facts, rule, context):
    """A function-entry task (kernelbenchx) calls the candidate's function by name."""
    if facts.entry is not None and facts.entry_function is None:
        yield (1, 1), facts.requested_entry


def _match_modelnew_binding(facts, rule, context):
    """ModelNew (or a function-entry task's function) bound once, by a class (def)
    statement without decorators or keywords: an assignment after it, a decorator or a
    metaclass could hand the harness another object than the one L1 read."""
    name, statement = (MODEL_NEW, "class") if facts.entry is None else (facts.entry, "def")
    bindings = facts.module_bindings(name)
    defined = [node for kind, node in bindings if kind == statement]
    for kind, node in bindings:
        if kind != statement:
            yield (node if hasattr(node, "lineno") else (1, 1)), {"name": f"a {kind} binding", "entry": name}
    for node in defined[1:]:
        yield node, {"name": f"a second {statement} statement", "entry": name}
    for node in defined:
        for decorator in node.decorator_list:
            yield decorator, {"name": f"a {statement} decorator", "entry": name}
        for keyword in getattr(node, "keywords", []):
            yield keyword.value, {"name": f"the class keyword {keyword.arg}", "entry": name}


def _match_kernel_body(facts, rule, context):
    """Names a Triton kernel's body uses that resolve to a module or builtin path
    matching `match` and not `allow`: a kernel body is device code, and Python in it only
    runs in Triton's interpreter, where it could be anything."""
    for name in sorted(facts.jit_functions):
        for statement in facts.functions[name].body:
            for node in ast.walk(statement):
                if context["value_uses"](node):
                    for value in facts.values(node):
                        if isinstance(value, Mod) and rule.matches(value.path) \
                                and not rule.is_namespace(value.path):
                            yield node, value.path


def _match_constructor_signature(facts, rule, context):
    reference = context.get("reference_init")
    if facts.model_new is None or reference is None:
        return
    expected, _, _ = reference
    found, with_default, varargs = init_parameters(facts, facts.model_new)
    extra = found[len(expected):]
    same_prefix = found[:len(expected)] == expected
    ok = (same_prefix and all(name in with_default for name in extra)) or \
        (varargs and expected[:len(found)] == found)
    if not ok:
        init = facts.method(facts.model_new, "__init__")
        yield (init if init is not None else facts.model_new), {
            "expected": "(" + ", ".join(expected) + ")", "found": "(" + ", ".join(found) + ")"}


def _forward_node(facts):
    forward = facts.forward_function()
    return forward if forward is not None else (1, 1)


def _match_triton_kernel(facts, rule, context):
    if not facts.jit_functions:
        yield (1, 1), "@triton.jit"


def _launches(facts):
    return [node for node in facts.forward_nodes() if isinstance(node, ast.Call)
            and any(isinstance(v, Launcher) for v in facts.values(node.func))]


def _match_triton_launch(facts, rule, context):
    if facts.forward_function() is not None and facts.jit_functions and not _launches(facts):
        yield _forward_node(facts), ", ".join(sorted(facts.jit_functions))


def _match_cpp_source(facts, rule, context):
    if "cpp_source" not in facts.strings:
        yield (1, 1), "cpp_source"


_EXTERN_C = re.compile(r'extern\s+"C"')


def _match_cpp_extern_c(facts, rule, context):
    source = facts.strings.get("cpp_source")
    if source is not None and not _EXTERN_C.search(source):
        yield (1, 1), "cpp_source"


def _loader_calls(facts, loaders):
    return [node for node in facts.module_nodes() if isinstance(node, ast.Call)
            and any(isinstance(v, Mod) and v.path in loaders for v in facts.values(node.func))]


def _native_calls(facts, language):
    return [node for node in facts.forward_nodes() if isinstance(node, ast.Call)
            and Native(language, True) in facts.values(node.func)]


def _match_cpp_load(facts, rule, context):
    if not _loader_calls(facts, CPP_LOADERS):
        yield (1, 1), "kforge_cpp.load"


def _match_cpp_call(facts, rule, context):
    if facts.forward_function() is not None and _loader_calls(facts, CPP_LOADERS) \
            and not _native_calls(facts, "cpp"):
        yield _forward_node(facts), "kforge_cpp"


def _match_cuda_kernel(facts, rule, context):
    if not any("__global__" in text for text in facts.strings.values()):
        yield (1, 1), "__global__"


def _match_cuda_load(facts, rule, context):
    if not _loader_calls(facts, CUDA_LOADERS):
        yield (1, 1), "load_inline"


def _match_cuda_call(facts, rule, context):
    if facts.forward_function() is not None and _loader_calls(facts, CUDA_LOADERS) \
            and not _native_calls(facts, "cuda"):
        yield _forward_node(facts), "load_inline"


MATCHERS = {
    "use": _match_use,
    "method": _match_method,
    "unresolved_call": _match_unresolved_call,
    "module_call": _match_module_call,
    "base_class": _match_base_class,
    "reference_use": _match_reference_use,
    "attribute_name": _match_attribute_name,
    "dunder": _match_dunder,
    "dynamic_attribute": _match_dynamic_attribute,
    "operator": _match_operator,
    "try": _match_try,
    "import": _match_import,
    "assign": _match_assign,
    "mask_index": _match_mask_index,
    "rearrange_copy": _match_rearrange_copy,
    "forward_output": _match_forward_output,
    "string_pattern": _match_string_pattern,
    "native_call": _match_native_call,
    "native_source_unresolved": _match_native_source_unresolved,
    "modelnew_present": _match_modelnew_present,
    "modelnew_binding": _match_modelnew_binding,
    "entry_function": _match_entry_function,
    "kernel_body": _match_kernel_body,
    "constructor_signature": _match_constructor_signature,
    "triton_kernel": _match_triton_kernel,
    "triton_launch": _match_triton_launch,
    "cpp_source": _match_cpp_source,
    "cpp_extern_c": _match_cpp_extern_c,
    "cpp_load": _match_cpp_load,
    "cpp_call": _match_cpp_call,
    "cuda_kernel": _match_cuda_kernel,
    "cuda_load": _match_cuda_load,
    "cuda_call": _match_cuda_call,
}
REGEX_KINDS = ("string_pattern",)


class _Fields(dict):
    """Message templates may use {name}, {expected}, {found}; unknown fields stay as is."""

    def __missing__(self, key):
        return "{" + key + "}"


def _finding(rule, position, matched):
    fields = _Fields(matched if isinstance(matched, dict) else {"name": matched})
    line, col = position
    return {"line": line, "col": col, "rule": rule.id, "severity": rule.severity,
            "message": rule.message.format_map(fields), "hint": rule.hint.format_map(fields)}


def _value_uses(facts):
    """A predicate: is `node` an expression whose value is used as such -- not a prefix
    of a longer attribute chain (`torch` in `torch.relu`), not the object of a getattr
    whose name folds, not a type annotation, not an assignment target."""
    prefixes, annotations = set(), set()
    for node in ast.walk(facts.tree):
        if isinstance(node, ast.Attribute):
            prefixes.add(id(node.value))
        folded = facts.folded_attribute_call(node) if isinstance(node, ast.Call) else None
        if folded is not None and folded[1] is not None:
            prefixes.add(id(folded[0]))
        for annotation in _annotations(node):
            annotations.update(id(n) for n in ast.walk(annotation))

    def value_use(node):
        if id(node) in prefixes or id(node) in annotations:
            return False
        if isinstance(node, (ast.Name, ast.Attribute, ast.Subscript)):
            return isinstance(node.ctx, ast.Load)
        if isinstance(node, ast.Call):
            folded = facts.folded_attribute_call(node)
            return folded is not None and folded[1] is not None
        return False
    return value_use


def _annotations(node):
    if isinstance(node, ast.arg) and node.annotation is not None:
        yield node.annotation
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
        yield node.returns
    elif isinstance(node, ast.AnnAssign):
        yield node.annotation


def extract_sources(facts):
    """Native sources the L2 compile stages need, read from string literals."""
    extracted = {}
    if "cpp_source" in facts.strings:
        extracted["cpp_source"] = facts.strings["cpp_source"]
    for call in _loader_calls(facts, CUDA_LOADERS):
        keywords = {k.arg: k.value for k in call.keywords if k.arg}
        cuda = facts.resolve_strings(keywords.get("cuda_sources"))
        if cuda is not None:
            extracted["cuda_source"] = cuda
            cpp = facts.resolve_strings(keywords.get("cpp_sources"))
            if cpp is not None:
                extracted["cpp_source"] = cpp
            functions = keywords.get("functions")
            if isinstance(functions, (ast.List, ast.Tuple)):
                extracted["cuda_functions"] = [e.value for e in functions.elts
                                               if isinstance(e, ast.Constant)]
            break
    if "cuda_source" not in extracted:
        for text in facts.strings.values():
            if "__global__" in text:
                extracted["cuda_source"] = text
                break
    return extracted


def init_parameters(facts, cls):
    """(positional parameter names, names with defaults, has *args) of cls.__init__, or
    ([], [], False) when no __init__ is defined along its candidate base classes."""
    init = facts.method(cls, "__init__")
    if init is None:
        return [], [], False
    args = init.args
    positional = [a.arg for a in args.posonlyargs + args.args][1:]  # drop self
    with_default = positional[len(positional) - len(args.defaults):] if args.defaults else []
    return positional, with_default, args.vararg is not None


def reference_init(task_path):
    """The reference Model.__init__'s parameters, read from the task file's AST."""
    facts = ModuleFacts(tasks.parse_task(task_path))
    model = facts.classes.get("Model")
    if model is None:
        raise protocol.harness_error(f"task file {task_path} defines no class Model")
    return init_parameters(facts, model)


def _run_rules(facts, rules, language, context):
    """Every rule's findings, in rule order; where an earlier error rule already reported
    the same place, a later rule adds nothing there (specific rules come before general
    ones). A warning never hides a later error."""
    findings, rejected = [], set()
    for rule in rules:
        if language not in rule.languages:
            continue
        mine = set()
        for where, matched in MATCHERS[rule.kind](facts, rule, context):
            position = where if isinstance(where, tuple) else facts.position(where)
            if position in mine or position in rejected:
                continue
            mine.add(position)
            findings.append(_finding(rule, position, matched))
        if rule.severity == "error":
            rejected |= mine
    return findings


def _syntax_failure(line, col, message, hint):
    return {"status": "fail", "error_class": protocol.SYNTAX_ERROR, "message": f"line {line}: {message}",
            "findings": [{"line": line, "col": col, "rule": "syntax", "severity": "error",
                          "message": message, "hint": hint}]}


def _too_deep(who, exc):
    """The candidate's syntax_error for code too deep or too long for `who` to follow
    (`exc`: the RecursionError or MemoryError it raised): the candidate's fault, at once,
    not the harness's."""
    return _syntax_failure(1, 0, f"the code is nested too deeply for {who} "
                                 f"({type(exc).__name__}: {exc or 'out of memory'})",
                           "flatten deeply nested expressions and long chains of operators, "
                           "attributes, subscripts or calls (split them into named steps)")


def check(code, language, task_path=None, rules_file=None, task_format=None):
    """The `check` action's result (a response dict without id). A kernelbenchx task's
    candidate supplies a function, not ModelNew: its implementation part is checked, with
    that function as the entry (kbx.py)."""
    try:
        rules = load_rules(rules_file)
    except ValueError as exc:
        raise protocol.harness_error(str(exc)) from None
    entry = None
    if task_format == kbx.FORMAT and task_path:
        entry = kbx.entry_name(kbx.split_task(tasks.read_task_source(task_path), task_path)[0], task_path)
        code = kbx.candidate_part(code)
    if len(code) > MAX_SOURCE_CHARS:
        return _syntax_failure(1, 0, f"the code is {len(code)} characters long, more than the "
                                     f"{MAX_SOURCE_CHARS} L1 reads",
                               "keep the candidate's source below 256K characters")
    try:
        tree = ast.parse(code, filename=tasks.CANDIDATE_FILE)
    except SyntaxError as exc:
        return _syntax_failure(exc.lineno or 0, exc.offset or 0, exc.msg,
                               "fix the Python syntax at that line")
    except (RecursionError, MemoryError) as exc:
        return _too_deep("Python's parser", exc)
    reference = reference_init(task_path) if task_path and entry is None else None
    # The analysis follows the syntax tree and values by recursion: code nested deeper
    # than the interpreter's recursion limit (or whose folding would not fit in memory)
    # cannot be analysed, and no verdict may rest on code L1 could not read.
    try:
        facts = ModuleFacts(tree, code, entry)
        findings = _run_rules(facts, rules, language, {"reference_init": reference,
                                                       "value_uses": _value_uses(facts)})
        extracted = extract_sources(facts)
    except (RecursionError, MemoryError) as exc:
        return _too_deep("L1's analysis", exc)
    findings.sort(key=lambda f: (f["line"], f["col"], f["rule"]))
    errors = [f for f in findings if f["severity"] == "error"]
    result = {"findings": findings, "extracted": extracted}
    if errors:
        first = errors[0]
        more = f" (and {len(errors) - 1} more finding(s))" if len(errors) > 1 else ""
        result.update(status="fail", error_class=protocol.CHECKER_REJECTED,
                      message=f"line {first['line']}:{first['col']}: [{first['rule']}] "
                              f"{first['message']}{more}")
    else:
        result.update(status="pass")
    return result
