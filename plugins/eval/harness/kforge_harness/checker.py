"""The L1 static check: syntax, ModelNew and its constructor, DSL compliance, anti-cheat
rules. Nothing of the candidate is executed: everything is read from its AST.

Rules live in YAML (rules/default.yaml beside this package, extended by the request's
options.rules_file). A rule names a `kind`, a matcher implemented here; the file gives it
its id, message, fix hint, languages, scope and the names it matches. README.md lists
the kinds and their semantics."""

import ast
import fnmatch
import os
import re

import yaml

from . import protocol, tasks
from .analysis import (CPP_LOADERS, CUDA_LOADERS, MODEL_NEW, ModuleFacts, dotted,
                       init_parameters)

DEFAULT_RULES_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                  "rules", "default.yaml")

SCOPES = ("module", "forward", "candidate")
SEVERITIES = ("error", "warning")

_OPERATORS = {"@": ast.MatMult, "+": ast.Add, "-": ast.Sub, "*": ast.Mult, "/": ast.Div,
              "//": ast.FloorDiv, "%": ast.Mod, "**": ast.Pow}


class Rule:
    FIELDS = ("id", "kind", "message", "hint", "languages", "scope", "match", "allow",
              "severity", "enabled")

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
        self.scope = spec.get("scope", "forward")
        self.match = list(spec.get("match", []))
        self.allow = list(spec.get("allow", []))
        self.severity = spec.get("severity", "error")
        self.enabled = bool(spec.get("enabled", True))
        if self.scope not in SCOPES:
            raise ValueError(f"{where} ({self.id}): scope must be one of {', '.join(SCOPES)}")
        if self.severity not in SEVERITIES:
            raise ValueError(f"{where} ({self.id}): severity must be error or warning")
        bad = [lang for lang in self.languages if lang not in protocol.LANGUAGES]
        if bad:
            raise ValueError(f"{where} ({self.id}): unknown language(s) {', '.join(bad)}")

    def matches(self, name):
        return (name is not None and any(_name_matches(name, p) for p in self.match)
                and not any(_name_matches(name, p) for p in self.allow))


def _name_matches(name, pattern):
    """fnmatch on dotted names; a plain module name also covers its submodules."""
    return fnmatch.fnmatchcase(name, pattern) or name.startswith(pattern + ".")


def _read_rules(path):
    try:
        with open(path, encoding="utf-8") as handle:
            document = yaml.safe_load(handle)
    except OSError as exc:
        raise ValueError(f"cannot read rules file {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ValueError(f"rules file {path} is not valid YAML: {exc}") from None
    if not isinstance(document, dict) or not isinstance(document.get("rules"), list):
        raise ValueError(f"rules file {path} must be a mapping with a 'rules' list")
    return [Rule(spec if isinstance(spec, dict) else {}, f"{path}: rule #{i + 1}")
            for i, spec in enumerate(document["rules"])]


def load_rules(extra_path=None):
    """The built-in rules, then the user's: a user rule with a built-in id replaces it
    (`enabled: false` switches it off), other user rules are added."""
    rules = {rule.id: rule for rule in _read_rules(DEFAULT_RULES_PATH)}
    if extra_path:
        for rule in _read_rules(extra_path):
            rules[rule.id] = rule
    return [rule for rule in rules.values() if rule.enabled]


# ---- matchers: (facts, rule, context) -> iterable of (line, name) ----

def _scope_nodes(facts, rule):
    if rule.scope == "module":
        return ast.walk(facts.tree)
    if rule.scope == "candidate":
        return facts.candidate_nodes()
    return facts.forward_nodes()


def _match_call(facts, rule, context):
    for node in _scope_nodes(facts, rule):
        if isinstance(node, ast.Call):
            name = facts.canonical(node.func)  # getattr(torch, "relu")(x) too
            if rule.matches(name):
                yield node.lineno, name


def _match_method(facts, rule, context):
    """Tensor-method calls (x.sum()) on anything that is not a module or a native
    library handle; each listed name also covers its in-place form (add -> add_)."""
    handles = facts.cpp_handles | facts.cuda_handles
    names = set(rule.match) | {m + "_" for m in rule.match}
    for node in _scope_nodes(facts, rule):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in names and node.func.attr not in rule.allow
                and not facts.module_rooted(node.func.value)
                and dotted(node.func.value) not in handles):
            yield node.lineno, "." + node.func.attr


def _match_operator(facts, rule, context):
    wanted = tuple(_OPERATORS[symbol] for symbol in rule.match if symbol in _OPERATORS)
    for node in _scope_nodes(facts, rule):
        if isinstance(node, (ast.BinOp, ast.AugAssign)) and isinstance(node.op, wanted):
            symbol = next(s for s, cls in _OPERATORS.items() if isinstance(node.op, cls))
            yield node.lineno, symbol


def _match_module_call(facts, rule, context):
    """self.<attr>(...) or self.<attr>.forward(...) where ModelNew built <attr> from a
    class matching `match` (torch.nn layers): the layer computes, not a kernel."""
    layers = set()
    for method in facts.methods(facts.model_new):
        for node in ast.walk(method):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) \
                    and rule.matches(facts.canonical(node.value.func)):
                layers.update(dotted(t) for t in node.targets
                              if (dotted(t) or "").startswith("self."))
    for node in _scope_nodes(facts, rule):
        if isinstance(node, ast.Call):
            name = dotted(node.func) or ""
            target = name[:-len(".forward")] if name.endswith(".forward") else name
            if target in layers:
                yield node.lineno, target


def _match_reference_use(facts, rule, context):
    if facts.model_new is None:
        return
    for base in facts.model_new.bases:
        if facts.canonical(base) in rule.match:
            yield base.lineno, facts.canonical(base)
    for node in _scope_nodes(facts, rule):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) \
                and node.id in rule.match:
            yield node.lineno, node.id


def _match_try(facts, rule, context):
    try_types = tuple(t for t in (ast.Try, getattr(ast, "TryStar", None)) if t)
    for node in _scope_nodes(facts, rule):
        if isinstance(node, try_types):
            yield node.lineno, "try"


def _match_import(facts, rule, context):
    for node in _scope_nodes(facts, rule):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if rule.matches(alias.name):
                    yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and rule.matches(node.module):
            yield node.lineno, node.module


def _match_attribute(facts, rule, context):
    for node in _scope_nodes(facts, rule):
        if isinstance(node, (ast.Attribute, ast.Name)) and isinstance(node.ctx, ast.Load):
            name = facts.canonical(node)
            if rule.matches(name) and facts.module_rooted(node):
                yield node.lineno, name


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
            if isinstance(target, ast.Attribute) and facts.module_rooted(target):
                name = facts.canonical(target)
                if rule.matches(name):
                    yield node.lineno, name
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in ("setattr", "delattr") and len(node.args) >= 2
                and facts.module_rooted(node.args[0])
                and isinstance(node.args[1], ast.Constant)):
            name = f"{facts.canonical(node.args[0])}.{node.args[1].value}"
            if rule.matches(name):
                yield node.lineno, name


# ---- structural matchers: what a candidate of a language must contain ----

def _match_modelnew_present(facts, rule, context):
    if facts.model_new is None:
        yield 1, MODEL_NEW


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
        line = init.lineno if init is not None else facts.model_new.lineno
        yield line, {"expected": "(" + ", ".join(expected) + ")",
                     "found": "(" + ", ".join(found) + ")"}


def _match_triton_kernel(facts, rule, context):
    if not facts.jit_functions:
        yield 1, "@triton.jit"


def _forward_line(facts):
    forward = facts.method(facts.model_new, "forward")
    return forward.lineno if forward is not None else 1


def _match_triton_launch(facts, rule, context):
    if facts.model_new is not None and facts.jit_functions \
            and not any(True for _ in facts.triton_launches()):
        yield _forward_line(facts), ", ".join(sorted(facts.jit_functions))


def _match_cpp_source(facts, rule, context):
    if "cpp_source" not in facts.strings:
        yield 1, "cpp_source"


_EXTERN_C = re.compile(r'extern\s+"C"')


def _match_cpp_extern_c(facts, rule, context):
    source = facts.strings.get("cpp_source")
    if source is not None and not _EXTERN_C.search(source):
        yield 1, "cpp_source"


def _match_cpp_load(facts, rule, context):
    if not facts.loader_calls(CPP_LOADERS):
        yield 1, "kforge_cpp.load"


def _match_cpp_call(facts, rule, context):
    if facts.model_new is not None and facts.loader_calls(CPP_LOADERS) \
            and not any(True for _ in facts.calls_into(facts.cpp_handles, CPP_LOADERS)):
        yield _forward_line(facts), "kforge_cpp"


def _match_cuda_kernel(facts, rule, context):
    if not any("__global__" in text for text in facts.strings.values()):
        yield 1, "__global__"


def _match_cuda_load(facts, rule, context):
    if not facts.loader_calls(CUDA_LOADERS):
        yield 1, "load_inline"


def _match_cuda_call(facts, rule, context):
    if facts.model_new is not None and facts.loader_calls(CUDA_LOADERS) \
            and not any(True for _ in facts.calls_into(facts.cuda_handles, CUDA_LOADERS)):
        yield _forward_line(facts), "load_inline"


MATCHERS = {
    "call": _match_call,
    "method": _match_method,
    "operator": _match_operator,
    "module_call": _match_module_call,
    "reference_use": _match_reference_use,
    "try": _match_try,
    "import": _match_import,
    "attribute": _match_attribute,
    "assign": _match_assign,
    "modelnew_present": _match_modelnew_present,
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


class _Fields(dict):
    """Message templates may use {name}, {expected}, {found}; unknown fields stay as is."""

    def __missing__(self, key):
        return "{" + key + "}"


def _finding(rule, line, matched):
    fields = _Fields(matched if isinstance(matched, dict) else {"name": matched})
    return {"line": line, "rule": rule.id, "severity": rule.severity,
            "message": rule.message.format_map(fields), "hint": rule.hint.format_map(fields)}


def extract_sources(facts):
    """Native sources the L2 compile stages need, read from string literals."""
    extracted = {}
    if "cpp_source" in facts.strings:
        extracted["cpp_source"] = facts.strings["cpp_source"]
    for call in facts.loader_calls(CUDA_LOADERS):
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


def reference_init(task_path):
    """The reference Model.__init__'s parameters, read from the task file's AST."""
    facts = ModuleFacts(tasks.parse_task(task_path))
    model = facts.classes.get("Model")
    if model is None:
        raise protocol.harness_error(f"task file {task_path} defines no class Model")
    return init_parameters(facts, model)


def check(code, language, task_path=None, rules_file=None):
    """The `check` action's result (a response dict without id)."""
    try:
        rules = load_rules(rules_file)
    except ValueError as exc:
        raise protocol.harness_error(str(exc)) from None
    try:
        tree = ast.parse(code, filename=tasks.CANDIDATE_FILE)
    except SyntaxError as exc:
        message = f"line {exc.lineno}: {exc.msg}"
        return {"status": "fail", "error_class": protocol.SYNTAX_ERROR, "message": message,
                "findings": [{"line": exc.lineno or 0, "rule": "syntax", "severity": "error",
                              "message": exc.msg,
                              "hint": "fix the Python syntax at that line"}]}
    facts = ModuleFacts(tree)
    context = {"reference_init": reference_init(task_path) if task_path else None}
    findings, seen = [], set()
    for rule in rules:
        if language not in rule.languages:
            continue
        for line, matched in MATCHERS[rule.kind](facts, rule, context):
            if (rule.id, line) not in seen:
                seen.add((rule.id, line))
                findings.append(_finding(rule, line, matched))
    findings.sort(key=lambda f: (f["line"], f["rule"]))
    errors = [f for f in findings if f["severity"] == "error"]
    result = {"findings": findings, "extracted": extract_sources(facts)}
    if errors:
        first = errors[0]
        more = f" (and {len(errors) - 1} more finding(s))" if len(errors) > 1 else ""
        result.update(status="fail", error_class=protocol.CHECKER_REJECTED,
                      message=f"line {first['line']}: [{first['rule']}] {first['message']}{more}")
    else:
        result.update(status="pass")
    return result
