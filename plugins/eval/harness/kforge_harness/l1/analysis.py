"""What the L1 checker knows about a candidate, read from its AST alone (nothing runs).

Any expression can be asked what it may evaluate to (`ModuleFacts.values`): a dotted path
into an imported module or the builtins (`torch.nn.functional.relu`, `builtins.eval`), one
of the candidate's own functions, classes or instances, a loaded native library or one of
its functions, a Triton kernel or launch, an instance of a library class (`torch.nn.Linear
(...)`), a container of such values, or an opaque value L1 cannot type (a tensor, a number,
the result of a library call; an opaque value read as `x.name` remembers `name`, so a call
of it is known to be a method call).

Names are followed through imports, assignments (module level, functions, class bodies,
attributes of the candidate's objects, tuple unpacking), `for` targets, containers and what
is added to them, function returns, arguments at known call sites, `functools.partial`,
`getattr` with a name that folds to a constant and `super()`. The analysis is
flow-insensitive (a name may be any value it is ever given); where it meets a cycle it
answers "opaque", never "nothing", so what it cannot follow is treated as unknown rather
than as harmless.

It also says which code runs (`candidate_nodes`, `forward_nodes`): what is reachable from
the module's import-time statements and ModelNew (construction included), or from
ModelNew.forward alone, following every reference to the candidate's functions, methods,
lambdas and classes. Triton kernel bodies are device code and are not followed.
"""

import ast
import operator
import textwrap
from dataclasses import dataclass
from typing import Optional

MODEL_NEW = "ModelNew"
# A kernelbenchx candidate may supply its function under this name instead (kbx.ALIAS).
ENTRY_ALIAS = "kernel_function"

TRITON_DECORATORS = ("triton.jit", "triton.language.jit")
CPP_LOADERS = ("kforge_cpp.load",)
CUDA_LOADERS = ("torch.utils.cpp_extension.load_inline", "torch.utils.cpp_extension.load")

# Calls of these builtins make a container (or an iterator) of what their arguments hold.
_PASS_ELEMENTS = {"builtins.list", "builtins.tuple", "builtins.set", "builtins.frozenset",
                  "builtins.dict", "builtins.sorted", "builtins.reversed", "builtins.iter",
                  "builtins.enumerate", "builtins.zip", "builtins.filter"}
# Container methods whose result holds, or is, an element of the container.
_ELEMENT_METHODS = {"get", "pop", "popitem", "setdefault", "popleft", "pop_front"}
_SAME_CONTAINER_METHODS = {"items", "values", "keys", "copy"}
# Container methods that add to it: method -> (argument index of the value, whether the
# argument is itself a collection of values).
_ADDING_METHODS = {"append": (0, False), "add": (0, False), "appendleft": (0, False),
                   "insert": (1, False), "setdefault": (1, False), "extend": (0, True),
                   "update": (0, True)}
# Methods torch and Python call on an object without the candidate calling them.
_IMPLICIT_METHODS = ("__call__", "forward", "__init__")
_MAX_PATH_SEGMENTS = 16
# How deep one question may lead (a name's value through the values it depends on);
# beyond it the answer is opaque, which the rules treat as unknown, never as harmless.
_MAX_DEPTH = 60
# The largest string and integer string folding builds: what a source or a size can be;
# beyond, the value is unknown (strings doubled by `s + s` twenty times are a TB).
_MAX_FOLDED_CHARS = 1 << 20
_MAX_FOLDED_BITS = 1 << 12
_NUMBER_OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
                     ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
                     ast.LShift: operator.lshift}


# ---- values ----

@dataclass(frozen=True)
class Mod:
    """A dotted path into an imported module or the builtins ('builtins.eval')."""
    path: str


@dataclass(frozen=True)
class Func:
    node: ast.AST  # FunctionDef, AsyncFunctionDef or Lambda


@dataclass(frozen=True)
class Cls:
    node: ast.ClassDef


@dataclass(frozen=True)
class Inst:
    node: ast.ClassDef


@dataclass(frozen=True)
class Instance:
    """An object a library class built: `torch.nn.Linear(...)` -> path torch.nn.Linear.
    `node` is the call; containers of modules (ModuleList) hold its arguments."""
    path: str
    node: ast.Call


@dataclass(frozen=True)
class Native:
    """A library kforge_cpp.load or load_inline returned (`function`: one of its
    functions); `language` is cpp or cuda."""
    language: str
    function: bool = False


@dataclass(frozen=True)
class Kernel:
    node: ast.FunctionDef  # a @triton.jit function


@dataclass(frozen=True)
class Launcher:
    """kernel[grid], or another attribute of a Triton kernel (kernel.run)."""


@dataclass(frozen=True)
class Container:
    node: ast.AST  # a list/tuple/set/dict display, a comprehension, or list()/dict()/zip()...


@dataclass(frozen=True)
class ContainerMethod:
    container: Container
    name: str


@dataclass(frozen=True)
class Data:
    """A constant or a formatted string: its methods (str.join, int.bit_length) compute
    nothing L1 cares about."""


DATA = Data()


@dataclass(frozen=True)
class Super:
    node: ast.ClassDef


@dataclass(frozen=True)
class Opaque:
    """A value L1 cannot type. `attr`: it was read as `<opaque>.attr`; `owner`: the
    library class of the Instance it was read from (torch.nn.Linear for layer.forward)."""
    attr: Optional[str] = None
    owner: Optional[str] = None


OPAQUE = Opaque()
_CONTAINER_NODES = (ast.List, ast.Tuple, ast.Set, ast.Dict, ast.ListComp, ast.SetComp,
                    ast.DictComp, ast.GeneratorExp)
_FUNCTION_NODES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_SCOPE_NODES = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef,
                ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


# ---- small helpers ----

def dotted(node):
    """'a.b.c' for a Name/Attribute chain, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def string_value(node):
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def is_main_guard(stmt):
    """`if __name__ == "__main__":` -- never runs when the harness imports the candidate."""
    test = stmt.test if isinstance(stmt, ast.If) else None
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name)
            and test.left.id == "__name__" and len(test.comparators) == 1
            and string_value(test.comparators[0]) == "__main__")


class _Binding:
    """One way a name gets a value: `kind` is assign (value node, unpacking path), iterate
    (iterable node, path), import (path), def, class, param, opaque."""
    __slots__ = ("kind", "node", "path", "scope")

    def __init__(self, kind, node, scope, path=()):
        self.kind, self.node, self.scope, self.path = kind, node, scope, path


class ModuleFacts:
    def __init__(self, tree, source="", entry=None):
        """`entry`: the function the harness calls for a function-entry task format
        (kernelbenchx); None: the candidate supplies ModelNew."""
        self.tree = tree
        self.requested_entry = entry  # the task's name for it (entry may become the alias)
        self.entry = entry
        self.entry_function = None
        self._lines = source.splitlines()
        self.parents = {}
        self.scope_of = {}   # id(node) -> the innermost scope node around it
        self.bindings = {}   # id(scope) -> name -> [_Binding]
        self.globals_declared = {}  # id(function) -> names declared global there
        self.attribute_sets = {}    # attribute name -> [(receiver node, _Binding)]
        self.container_additions = []  # (receiver node, value node, value is a collection)
        self.call_sites = {}   # function name -> [ast.Call] (syntactic, for arguments)
        self._all_calls = []
        self.escaping_names = set()  # function/method names used other than as a callee
        self.functions = {}    # module-level function name -> node
        self.classes = {}      # module-level class name -> node
        self.all_classes = []  # every ClassDef, nested ones included
        self.strings = {}      # module-level name bound once -> its folded text
        self.model_new = None
        self._cache = {}
        self._in_progress = set()  # node ids and containers being evaluated
        self._held_cache = {}
        # Values computed before the kernel and subclass tables exist are provisional:
        # the cache is dropped once each is built.
        self.jit_functions = set()
        self._subclasses = {}
        self._bases = {}
        self._collect()
        self.model_new = self.classes.get(MODEL_NEW)
        if entry is not None:
            self.entry = entry if self.module_bindings(entry) else ENTRY_ALIAS
            self.entry_function = self.functions.get(self.entry)
        self.jit_functions = {name for name, fn in self.functions.items() if self._is_jit(fn)}
        self._cache.clear()
        self._held_cache.clear()
        self._bases.clear()
        self._subclasses = self._subclass_table()
        self._cache.clear()
        self._held_cache.clear()
        self._bases.clear()
        for name, exprs in self.bindings.get(id(tree), {}).items():
            text = self.fold_string(exprs[0].node) if len(exprs) == 1 and \
                exprs[0].kind == "assign" and not exprs[0].path else None
            if text is not None:
                self.strings[name] = text
        self._module_nodes = None
        self._candidate_nodes = None
        self._forward_nodes = None

    # ---- positions ----

    def source_line(self, line):
        return self._lines[line - 1] if 0 < line <= len(self._lines) else ""

    def position(self, node):
        """(line, col), both 1-based, col in characters: of the name in `a.name`, of the
        node's start otherwise."""
        line = getattr(node, "lineno", 1)
        offset = getattr(node, "col_offset", 0)
        if isinstance(node, ast.Attribute) and node.end_lineno == node.lineno:
            line, offset = node.end_lineno, node.end_col_offset - len(node.attr.encode("utf-8"))
        text = self.source_line(line).encode("utf-8")
        return line, len(text[:offset].decode("utf-8", "replace")) + 1

    # ---- collection: scopes, bindings, attribute assignments ----

    def _collect(self):
        for parent in ast.walk(self.tree):
            for child in ast.iter_child_nodes(parent):
                self.parents[id(child)] = parent
        self._scan_scope(self.tree, self.tree)
        for stmt in self.tree.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions[stmt.name] = stmt
            elif isinstance(stmt, ast.ClassDef):
                self.classes[stmt.name] = stmt
        for node in ast.walk(self.tree):
            if isinstance(node, ast.ClassDef):
                self.all_classes.append(node)
            elif isinstance(node, ast.Call):
                self._all_calls.append(node)
                self._note_call(node)
            elif isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Load):
                parent = self.parents.get(id(node))
                if not (isinstance(parent, ast.Call) and parent.func is node):
                    self.escaping_names.add(node.id if isinstance(node, ast.Name) else node.attr)

    def _note_call(self, node):
        func = node.func
        name = func.id if isinstance(func, ast.Name) else (
            func.attr if isinstance(func, ast.Attribute) else None)
        if name is not None:
            self.call_sites.setdefault(name, []).append(node)
        if isinstance(func, ast.Attribute) and func.attr in _ADDING_METHODS:
            index, collection = _ADDING_METHODS[func.attr]
            if len(node.args) > index:
                self.container_additions.append((func.value, node.args[index], collection))
        if isinstance(func, ast.Name) and func.id == "setattr" and len(node.args) == 3:
            name = self.fold_string(node.args[1])
            if name is not None:
                scope = self.scope_of.get(id(node), self.tree)
                self.attribute_sets.setdefault(name, []).append(
                    (node.args[0], _Binding("assign", node.args[2], scope)))

    def _bind(self, scope, name, binding):
        if scope is not self.tree and name in self.globals_declared.get(id(scope), ()):
            scope = self.tree
        self.bindings.setdefault(id(scope), {}).setdefault(name, []).append(binding)

    def _scan_scope(self, scope, root):
        """Record the scope of every node under `root` and the bindings each scope makes;
        nested scopes are scanned as their own."""
        for node in self.own_nodes(root):
            self.scope_of[id(node)] = scope
            if isinstance(node, (ast.Global, ast.Nonlocal)):
                self.globals_declared.setdefault(id(scope), set()).update(node.names)
        for node in self.own_nodes(root):
            self._bindings_of(scope, node)
        for node in self.own_nodes(root):
            if isinstance(node, _SCOPE_NODES):
                self._scan_nested(scope, node)

    def _scan_nested(self, enclosing, node):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            args = node.args
            for arg in args.posonlyargs + args.args + args.kwonlyargs + \
                    [a for a in (args.vararg, args.kwarg) if a]:
                self.scope_of[id(arg)] = node
                self._bind(node, arg.arg, _Binding("param", arg, node))
        elif isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            for generator in node.generators:
                self._bind_target(node, generator.target, "iterate", generator.iter, ())
        self._scan_scope(node, node)

    def own_nodes(self, root):
        """Nodes of `root`'s own scope: not inside nested functions, classes or
        comprehensions (their decorators, defaults and bases are evaluated here)."""
        stack = list(self._scope_children(root))
        while stack:
            node = stack.pop()
            yield node
            if isinstance(node, _SCOPE_NODES):
                stack.extend(self._header_children(node))
            else:
                stack.extend(ast.iter_child_nodes(node))

    @staticmethod
    def _scope_children(root):
        if isinstance(root, ast.Lambda):
            return [root.body] + root.args.defaults + [d for d in root.args.kw_defaults if d]
        if isinstance(root, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)):
            return list(root.body)
        if isinstance(root, ast.DictComp):
            parts = [root.key, root.value]
        else:
            parts = [root.elt]
        for generator in root.generators:
            parts += [generator.target, generator.iter] + generator.ifs
        return parts

    @staticmethod
    def _header_children(node):
        """What a nested scope evaluates in its enclosing scope."""
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return node.decorator_list + node.args.defaults + \
                [d for d in node.args.kw_defaults if d]
        if isinstance(node, ast.ClassDef):
            return node.decorator_list + node.bases + [k.value for k in node.keywords]
        return []  # lambdas and comprehensions: scanned as their own scopes

    def _bindings_of(self, scope, node):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                self._bind_target(scope, target, "assign", node.value, ())
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            self._bind_target(scope, node.target, "assign", node.value, ())
        elif isinstance(node, ast.AugAssign):
            self._bind_target(scope, node.target, "opaque", node, ())
        elif isinstance(node, ast.NamedExpr):
            self._bind_target(scope, node.target, "assign", node.value, ())
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            self._bind_target(scope, node.target, "iterate", node.iter, ())
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if item.optional_vars is not None:
                    self._bind_target(scope, item.optional_vars, "opaque", item, ())
        elif isinstance(node, ast.ExceptHandler) and node.name:
            self._bind(scope, node.name, _Binding("opaque", node, scope))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    self._bind(scope, alias.asname, _Binding("import", alias.name, scope))
                else:  # `import a.b` binds `a`
                    root = alias.name.split(".")[0]
                    self._bind(scope, root, _Binding("import", root, scope))
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                if alias.name != "*":
                    self._bind(scope, alias.asname or alias.name,
                               _Binding("import", f"{node.module}.{alias.name}", scope))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self._bind(scope, node.name, _Binding("def", node, scope))
        elif isinstance(node, ast.ClassDef):
            self._bind(scope, node.name, _Binding("class", node, scope))

    def _bind_target(self, scope, target, kind, value, path):
        if isinstance(target, ast.Name):
            self._bind(scope, target.id, _Binding(kind, value, scope, path))
        elif isinstance(target, (ast.Tuple, ast.List)):
            for index, element in enumerate(target.elts):
                inner = element.value if isinstance(element, ast.Starred) else element
                step = None if isinstance(element, ast.Starred) else index
                self._bind_target(scope, inner, kind, value, path + (step,))
        elif isinstance(target, ast.Attribute):
            self.attribute_sets.setdefault(target.attr, []).append(
                (target.value, _Binding(kind, value, scope, path)))
        elif isinstance(target, ast.Subscript) and kind == "assign" and not path:
            self.container_additions.append((target.value, value, False))

    def _is_jit(self, fn):
        for decorator in fn.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            if any(isinstance(v, Mod) and v.path in TRITON_DECORATORS
                   for v in self.values(target)):
                return True
        return False

    def _subclass_table(self):
        """ClassDef -> itself and every candidate class deriving from it."""
        table = {id(c): [c] for c in self.all_classes}
        for cls in self.all_classes:
            for base in self.candidate_bases(cls):
                table[id(base)].append(cls)
        return table

    def candidate_bases(self, cls):
        """The candidate's own classes `cls` derives from, transitively (in a stable
        order, each once, `cls` itself never)."""
        if id(cls) not in self._bases:
            found, queue = [], [cls]
            while queue:
                for base in queue.pop(0).bases:
                    for value in self.values(base):
                        if isinstance(value, Cls) and value.node is not cls and \
                                all(value.node is not f for f in found):
                            found.append(value.node)
                            queue.append(value.node)
            self._bases[id(cls)] = found
        return self._bases[id(cls)]

    # ---- string folding ----

    def fold_string(self, node, depth=0):
        """The text of a string expression built from constants -- literals, `+`, `*` by
        a number, f-strings, str.format, `%`, replace/join/strip, textwrap.dedent, names
        bound once to such expressions; None when it is not known statically."""
        value = self._fold(node, depth)
        return value if isinstance(value, str) else None

    def _fold(self, node, depth):
        """The constant (str, int, float, bool) `node` evaluates to, or None."""
        if depth > 20 or node is None:
            return None
        fold = lambda n: self._fold(n, depth + 1)  # noqa: E731
        if isinstance(node, ast.Constant):
            return node.value if isinstance(node.value, (str, int, float, bool)) else None
        if isinstance(node, ast.BinOp):
            left, right = fold(node.left), fold(node.right)
            if left is None or right is None:
                return None
            numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool)
                          for v in (left, right))
            try:
                if numbers and isinstance(node.op, tuple(_NUMBER_OPERATORS)) and \
                        not (isinstance(node.op, (ast.Pow, ast.LShift)) and abs(right) > 64):
                    value = _NUMBER_OPERATORS[type(node.op)](left, right)
                    # Folding stays small: 10**64, then **64 again, grows past memory.
                    return None if isinstance(value, int) and value.bit_length() > _MAX_FOLDED_BITS \
                        else value
                if isinstance(node.op, ast.Add) and type(left) is type(right):
                    if isinstance(left, str) and len(left) + len(right) > _MAX_FOLDED_CHARS:
                        return None
                    return left + right
                if isinstance(node.op, ast.Mult) and isinstance(left, str) and isinstance(right, int):
                    return left * right if len(left) * right <= _MAX_FOLDED_CHARS else None
                if isinstance(node.op, ast.Mod) and isinstance(left, str):
                    args = tuple(fold(e) for e in node.right.elts) \
                        if isinstance(node.right, ast.Tuple) else right
                    return None if args is None or (isinstance(args, tuple) and None in args) \
                        else left % args
            except (TypeError, ValueError, ZeroDivisionError, OverflowError):
                return None
            return None
        if isinstance(node, ast.JoinedStr):
            parts = []
            for value in node.values:
                if isinstance(value, ast.FormattedValue):
                    spec = fold(value.format_spec) if value.format_spec is not None else ""
                    inner = fold(value.value)
                    if inner is None or spec is None or value.conversion not in (-1, 115):
                        return None
                    try:
                        parts.append(format(inner, spec))
                    except (TypeError, ValueError):
                        return None
                else:
                    parts.append(value.value)
            return "".join(parts)
        if isinstance(node, ast.Call):
            return self._fold_call(node, fold)
        if isinstance(node, ast.Name):
            exprs = self.assigned_exprs(node, complete=True)
            if exprs is not None and len(exprs) == 1:
                return fold(exprs[0])
        return None

    def _fold_call(self, node, fold):
        if any(isinstance(a, ast.Starred) for a in node.args) or \
                any(k.arg is None for k in node.keywords):
            return None
        args = [fold(a) for a in node.args]
        keywords = {k.arg: fold(k.value) for k in node.keywords}
        if None in args or None in keywords.values():
            return None
        func = node.func
        if isinstance(func, ast.Attribute):
            if func.attr == "join" and len(node.args) == 1 and not keywords and \
                    isinstance(node.args[0], (ast.List, ast.Tuple)):
                separator = fold(func.value)
                items = [fold(e) for e in node.args[0].elts]
                if isinstance(separator, str) and all(isinstance(i, str) for i in items):
                    return separator.join(items)
                return None
            receiver = fold(func.value)
            if isinstance(receiver, str) and func.attr in ("format", "replace", "strip",
                                                           "lstrip", "rstrip"):
                try:
                    return getattr(receiver, func.attr)(*args, **keywords)
                except (TypeError, ValueError, IndexError, KeyError):
                    return None
        if len(args) == 1 and not keywords:
            callees = self.values(func)
            if isinstance(args[0], str) and Mod("textwrap.dedent") in callees:
                return textwrap.dedent(args[0])
            if Mod("builtins.str") in callees:
                return str(args[0])
        return None

    def folded_attribute_call(self, node):
        """(receiver node, folded name) for getattr/hasattr/setattr/delattr(x, name, ...)
        calls of the builtins, name folded (None when it does not fold); else None."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in ("getattr", "hasattr", "setattr", "delattr") \
                and len(node.args) >= 2 \
                and Mod("builtins." + node.func.id) in self.values(node.func):
            return node.args[0], self.fold_string(node.args[1])
        return None

    def resolve_strings(self, node):
        """The text of a source argument: a foldable string expression, or a list of
        them (joined by newlines), or a name bound once to either; None when it cannot be
        known statically."""
        if node is None:
            return None
        text = self.fold_string(node)
        if text is not None:
            return text
        if isinstance(node, (ast.List, ast.Tuple)):
            parts = [self.resolve_strings(element) for element in node.elts]
            return None if None in parts or not parts else "\n".join(parts)
        if isinstance(node, ast.Name):
            exprs = self.assigned_exprs(node, complete=True)
            if exprs is not None and len(exprs) == 1:
                return self.resolve_strings(exprs[0])
        return None

    # ---- names ----

    def module_bindings(self, name):
        """(kind, node) for each way the module binds `name`: class (the ClassDef),
        def, import, param, assign or iterate (the value), opaque."""
        return [(b.kind, b.node) for b in self.bindings.get(id(self.tree), {}).get(name, [])]

    def assigned_exprs(self, node, complete=False):
        """The expressions the name `node` is plainly assigned (`name = expr`) where it is
        used. With `complete`, None when it is also bound another way (a parameter, a
        loop, unpacking, an import)."""
        bindings = self._lookup(node.id, self.scope_of.get(id(node), self.tree)) or []
        exprs = [b.node for b in bindings if b.kind == "assign" and not b.path]
        if complete and len(exprs) != len(bindings):
            return None
        return exprs

    def _lookup(self, name, scope):
        """The bindings `name` has where it is used in `scope`: the scope's own, then
        enclosing functions' (class bodies are skipped, as Python does), then the
        module's; None when the candidate never binds it (a builtin)."""
        first = True
        while True:
            if first or not isinstance(scope, ast.ClassDef):
                if name in self.globals_declared.get(id(scope), ()):
                    scope = self.tree
                found = self.bindings.get(id(scope), {}).get(name)
                if found:
                    return found
            if scope is self.tree:
                return None
            first = False
            scope = self.scope_of.get(id(scope), self.tree)

    def _class_of_method(self, fn):
        parent = self.parents.get(id(fn))
        return parent if isinstance(parent, ast.ClassDef) else None

    # ---- values ----

    def values(self, node):
        """What `node` may evaluate to: a frozenset of values. Each node is evaluated
        once; a node met again while it is being evaluated (a cycle: x = f(x)), or past
        _MAX_DEPTH, is opaque there, which keeps the answer conservative: an opaque
        receiver or callee is checked against the allowlists, never waved through."""
        key = id(node)
        if key in self._cache:
            return self._cache[key]
        if key in self._in_progress or len(self._in_progress) >= _MAX_DEPTH:
            return frozenset({OPAQUE})
        self._in_progress.add(key)
        try:
            result = frozenset(self._evaluate(node))
        finally:
            self._in_progress.discard(key)
        self._cache[key] = result
        return result

    def _evaluate(self, node):
        if isinstance(node, ast.Name):
            return self._name_values(node)
        if isinstance(node, ast.Attribute):
            return self.attribute_values(self.values(node.value), node.attr)
        if isinstance(node, ast.Call):
            return self._call_values(node)
        if isinstance(node, ast.Subscript):
            return self._subscript_values(self.values(node.value), node.slice)
        if isinstance(node, ast.Lambda):
            return {Func(node)}
        if isinstance(node, _CONTAINER_NODES):
            return {Container(node)}
        if isinstance(node, ast.IfExp):
            return self.values(node.body) | self.values(node.orelse)
        if isinstance(node, ast.BoolOp):
            return set().union(*(self.values(v) for v in node.values))
        if isinstance(node, ast.NamedExpr):
            return self.values(node.value)
        if isinstance(node, ast.Starred):
            return self.values(node.value)
        if isinstance(node, (ast.Constant, ast.JoinedStr)):
            return {DATA}
        return {OPAQUE}

    def _name_values(self, node):
        scope = self.scope_of.get(id(node), self.tree)
        bindings = self._lookup(node.id, scope)
        if bindings is None:
            if node.id in ("__name__", "__file__", "__doc__"):
                return {OPAQUE}
            return {Mod("builtins." + node.id)}
        found = set()
        for binding in bindings:
            found |= self._binding_values(binding)
        return found

    def _binding_values(self, binding):
        kind = binding.kind
        if kind == "import":
            return {Mod(binding.node)}
        if kind == "def":
            if binding.scope is self.tree and binding.node.name in self.jit_functions:
                return {Kernel(binding.node)}
            return {Func(binding.node)}
        if kind == "class":
            return {Cls(binding.node)}
        if kind == "param":
            return self._param_values(binding.scope, binding.node)
        if kind == "assign":
            return self._unpack(self.values(binding.node), binding.node, binding.path)
        if kind == "iterate":
            return self._unpack(self.elements(self.values(binding.node)), None, binding.path)
        return {OPAQUE}

    def _unpack(self, values, value_node, path):
        for step in path:
            if value_node is not None and isinstance(value_node, (ast.Tuple, ast.List)) \
                    and step is not None and step < len(value_node.elts) \
                    and not any(isinstance(e, ast.Starred) for e in value_node.elts):
                value_node = value_node.elts[step]
                values = self.values(value_node)
            else:
                value_node = None
                values = self.elements(values)
        return set(values)

    def _param_values(self, fn, arg):
        """A parameter is `self`/`cls` for methods; otherwise what known call sites pass
        (and its default), plus opaque when the function may be called from code L1 does
        not see (torch, Triton, the harness) or from a call it cannot map."""
        args = fn.args
        positional = args.posonlyargs + args.args
        cls = self._class_of_method(fn) if not isinstance(fn, ast.Lambda) else None
        decorators = {dotted(d) for d in getattr(fn, "decorator_list", [])}
        bound = cls is not None and "staticmethod" not in decorators
        if bound and positional and arg is positional[0]:
            targets = self._subclasses.get(id(cls), [cls])
            if "classmethod" in decorators:
                return {Cls(c) for c in targets}
            return {Inst(c) for c in targets}
        found = set()
        defaults = dict(zip([a.arg for a in positional][len(positional) - len(args.defaults):],
                            args.defaults))
        defaults.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d})
        if arg.arg in defaults:
            found |= self.values(defaults[arg.arg])
        if arg is args.vararg or arg is args.kwarg or isinstance(fn, ast.Lambda) \
                or self._called_unseen(fn, cls):
            return found | {OPAQUE}
        sites = self._call_sites(fn, cls)
        if not sites:
            return found | {OPAQUE}
        index = [a.arg for a in positional].index(arg.arg) if arg in positional else None
        if index is not None and bound:
            index -= 1  # called as obj.method(...): self is not among the arguments
        for call in sites:
            if any(isinstance(a, ast.Starred) for a in call.args) or \
                    any(k.arg is None for k in call.keywords):
                found.add(OPAQUE)
                continue
            keyword = next((k.value for k in call.keywords if k.arg == arg.arg), None)
            if keyword is not None:
                found |= self.values(keyword)
            elif index is not None and 0 <= index < len(call.args):
                found |= self.values(call.args[index])
            elif arg.arg not in defaults:
                found.add(OPAQUE)
        return found or {OPAQUE}

    def _called_unseen(self, fn, cls):
        """Whether code L1 does not see may call `fn`: the harness (ModelNew's constructor
        and forward), torch or Python (other special methods), or anyone it was handed to
        (its name is used other than as a callee)."""
        if fn.name in self.escaping_names:
            return True
        if fn.name.startswith("__") and fn.name.endswith("__") and fn.name not in _IMPLICIT_METHODS:
            return True
        if fn is self.entry_function:  # the harness calls it
            return True
        return fn.name in _IMPLICIT_METHODS and cls is not None and self.model_new is not None \
            and any(c is self.model_new for c in self._subclasses.get(id(cls), [cls]))

    def _call_sites(self, fn, cls):
        """The calls that reach `fn`: by name (f(...), obj.f(...)); a constructor through
        its class (C(...)); __call__ and forward through an instance (obj(...))."""
        sites = [call for call in self.call_sites.get(fn.name, [])
                 if Func(fn) in self.values(call.func)]
        if cls is not None and fn.name in _IMPLICIT_METHODS:
            wanted = Cls if fn.name == "__init__" else Inst
            family = self._subclasses.get(id(cls), [cls])
            sites += [call for call in self._all_calls if any(
                isinstance(v, wanted) and any(v.node is c for c in family)
                for v in self.values(call.func))]
        return sites

    def attribute_values(self, receivers, name):
        """What `<receiver>.name` may be, for each value the receiver may be."""
        found = set()
        for value in receivers:
            if isinstance(value, Mod):
                if value.path.count(".") < _MAX_PATH_SEGMENTS:
                    found.add(Mod(f"{value.path}.{name}"))
                else:
                    found.add(Opaque(name))
            elif isinstance(value, (Inst, Cls)):
                found |= self._member_values(value, name)
            elif isinstance(value, Super):
                found |= self._super_values(value.node, name)
            elif isinstance(value, Instance):
                found.add(Opaque(name, value.path))
            elif isinstance(value, Native):
                found.add(Native(value.language, True) if not value.function else Opaque(name))
            elif isinstance(value, (Kernel, Launcher)):
                found.add(Launcher())
            elif isinstance(value, Container):
                found.add(ContainerMethod(value, name))
            elif isinstance(value, Data):
                found.add(DATA)
            else:
                found.add(Opaque(name))
        return found

    def _member_values(self, owner, name):
        """A method, class attribute or instance attribute of the candidate's class `owner`
        is (an instance of); `Function.apply` of a torch.autograd.Function is its forward."""
        cls = owner.node
        if isinstance(owner, Cls) and name == "apply" and \
                self._derives_from(cls, "torch.autograd.Function"):
            forward = self.method(cls, "forward")
            if forward is not None:
                return {Func(forward)}
        found = set()
        method = self.method(cls, name)
        if method is not None:
            found.add(Func(method))
        for klass in [cls] + self.candidate_bases(cls):
            for binding in self.bindings.get(id(klass), {}).get(name, []):
                if binding.kind != "def":
                    found |= self._binding_values(binding)
        for receiver, binding in self.attribute_sets.get(name, []):
            if any(isinstance(v, (Inst, Cls)) and v.node is cls for v in self.values(receiver)):
                found |= self._binding_values(binding)
        return found or {Opaque(name)}

    def _super_values(self, cls, name):
        found = set()
        for base in cls.bases:
            for value in self.values(base):
                if isinstance(value, Cls):
                    found |= self._member_values(Inst(value.node), name)
                else:
                    found.add(Opaque(name))
        return found or {Opaque(name)}

    def _derives_from(self, cls, path):
        for klass in [cls] + self.candidate_bases(cls):
            for base in klass.bases:
                if Mod(path) in self.values(base):
                    return True
        return False

    def _subscript_values(self, receivers, key):
        found = set()
        for value in receivers:
            if isinstance(value, (Kernel, Launcher)):
                found.add(Launcher())
            elif isinstance(value, Container) and isinstance(value.node, ast.Dict) \
                    and isinstance(key, ast.Constant):
                found |= self._dict_entries(value, key.value)
            elif isinstance(value, (Container, Instance)):
                found |= self.elements({value})
            else:
                found.add(OPAQUE)
        return found

    def _dict_entries(self, container, key):
        """`d[key]` for a dict display: the entries under that constant key, under keys
        that are not constants, from ** expansions, and whatever is added later."""
        found = set()
        for entry_key, value in zip(container.node.keys, container.node.values):
            if entry_key is None:
                found |= self.elements(self.values(value))
            elif not isinstance(entry_key, ast.Constant) or entry_key.value == key:
                found |= self.values(value)
        return found | self._additions_to(container)

    def elements(self, receivers):
        """What iterating over, or indexing, each receiver may give."""
        found = set()
        for value in receivers:
            if isinstance(value, ContainerMethod) and value.name in _SAME_CONTAINER_METHODS:
                value = value.container
            if isinstance(value, (Container, Instance)):
                found |= self._held(value)
            elif isinstance(value, (Kernel, Launcher)):
                found.add(Launcher())
            else:
                found.add(OPAQUE)
        return found

    def _held(self, holder):
        """What a container or a library container object holds; computed once, opaque
        where a container holds itself."""
        if holder in self._held_cache:
            return self._held_cache[holder]
        if holder in self._in_progress or len(self._in_progress) >= _MAX_DEPTH:
            return {OPAQUE}
        self._in_progress.add(holder)
        try:
            found = frozenset(self._container_elements(holder) if isinstance(holder, Container)
                              else self._instance_elements(holder))
        finally:
            self._in_progress.discard(holder)
        self._held_cache[holder] = found
        return found

    def _container_elements(self, container):
        node = container.node
        found = set()
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            for element in node.elts:
                if isinstance(element, ast.Starred):
                    found |= self.elements(self.values(element.value))
                else:
                    found |= self.values(element)
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                found |= self.values(value) if key is not None else \
                    self.elements(self.values(value))
        elif isinstance(node, ast.DictComp):
            found |= self.values(node.value)
        elif isinstance(node, ast.Call):  # list(...), dict(...), zip(...): what they are given
            for arg in node.args:
                found |= self.elements(self.values(arg.value if isinstance(arg, ast.Starred)
                                                   else arg))
            for keyword in node.keywords:
                found |= self.values(keyword.value) if keyword.arg else \
                    self.elements(self.values(keyword.value))
        else:
            found |= self.values(node.elt)
        return found | self._additions_to(container)

    def _instance_elements(self, instance):
        """The modules a ModuleList/Sequential/ModuleDict was built from, and what is added
        to it later; opaque when built from nothing known."""
        found = set()
        for arg in instance.node.args:
            for value in self.values(arg):
                found |= self.elements({value}) if isinstance(value, Container) else {value}
        found |= self._additions_to(instance)
        return found or {OPAQUE}

    def _additions_to(self, container):
        found = set()
        for receiver, value, collection in self.container_additions:
            if container in self.values(receiver):
                values = self.values(value)
                found |= self.elements(values) if collection else values
        return found

    def _call_values(self, node):
        folded = self.folded_attribute_call(node)
        if folded is not None:
            receiver, name = folded
            if node.func.id != "getattr":
                return {OPAQUE}
            receivers = self.values(receiver)
            if name is not None:
                return self.attribute_values(receivers, name)
            if receivers and all(isinstance(v, Native) and not v.function for v in receivers):
                return {Native(v.language, True) for v in receivers}  # a library function by name
            return {OPAQUE}
        found = set()
        for callee in self.values(node.func):
            found |= self._result_of(callee, node)
        return found or {OPAQUE}

    def _result_of(self, callee, node):
        if isinstance(callee, Mod):
            path = callee.path
            if path in CPP_LOADERS:
                return {Native("cpp")}
            if path in CUDA_LOADERS:
                return {Native("cuda")}
            if path == "functools.partial" and node.args:
                return set(self.values(node.args[0]))
            if path in TRITON_DECORATORS:
                return {Launcher()}
            if path == "builtins.super":
                cls = self._enclosing_class(node)
                return {Super(cls)} if cls is not None else {OPAQUE}
            if path in _PASS_ELEMENTS:
                return {Container(node)}
            if path == "builtins.next" and node.args:
                return self.elements(self.values(node.args[0]))
            if path.rpartition(".")[2][:1].isupper() and not path.startswith("builtins."):
                return {Instance(path, node)}
            return {OPAQUE}
        if isinstance(callee, Func):
            return self.returned_values(callee.node)
        if isinstance(callee, Cls):
            return {Inst(callee.node)}
        if isinstance(callee, ContainerMethod):
            if callee.name in _ELEMENT_METHODS:
                return self.elements({callee.container})
            if callee.name in _SAME_CONTAINER_METHODS:
                return {callee.container}
        return {OPAQUE}

    def _enclosing_class(self, node):
        scope = self.scope_of.get(id(node), self.tree)
        while scope is not self.tree:
            if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
                cls = self._class_of_method(scope)
                if cls is not None:
                    return cls
            scope = self.scope_of.get(id(scope), self.tree)
        return None

    def returned_values(self, fn):
        if isinstance(fn, ast.Lambda):
            return set(self.values(fn.body))
        found = set()
        for node in self.own_nodes(fn):
            if isinstance(node, ast.Return) and node.value is not None:
                found |= self.values(node.value)
            elif isinstance(node, (ast.Yield, ast.YieldFrom)):
                found.add(OPAQUE)
        return found or {OPAQUE}

    # ---- classes ----

    def method(self, cls, name):
        """`name` defined in `cls` or in one of the candidate classes it derives from."""
        if cls is None:
            return None
        for klass in [cls] + self.candidate_bases(cls):
            for stmt in klass.body:
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == name:
                    return stmt
        return None

    # ---- what runs ----

    def module_nodes(self):
        """Every node of the file but the bodies of `if __name__ == "__main__":` blocks."""
        if self._module_nodes is None:
            skipped = set()
            for stmt in self.tree.body:
                if is_main_guard(stmt):
                    skipped.update(id(n) for s in stmt.body for n in ast.walk(s))
            self._module_nodes = [n for n in ast.walk(self.tree) if id(n) not in skipped]
        return self._module_nodes

    def candidate_nodes(self):
        """The code that runs when the candidate is imported, built and called: the
        module's import-time statements (decorators, default arguments and class bodies
        included), ModelNew, and every function, method, lambda and class they refer to,
        transitively."""
        if self._candidate_nodes is None:
            roots = [self.tree] + [u for u in (self.model_new, self.entry_function) if u is not None]
            self._candidate_nodes = self._unit_nodes(self._reachable(roots))
        return self._candidate_nodes

    def forward_nodes(self):
        """ModelNew.forward (or the entry function) and what it refers to, transitively
        (construction excluded)."""
        if self._forward_nodes is None:
            forward = self.forward_function()
            self._forward_nodes = self._unit_nodes(
                self._reachable([forward] if forward is not None else []))
        return self._forward_nodes

    def forward_function(self):
        """What the harness calls per trial: ModelNew.forward, or the entry function."""
        if self.entry is not None:
            return self.entry_function
        return self.method(self.model_new, "forward")

    def _unit_nodes(self, units):
        seen, nodes = set(), []
        for unit in units:
            for node in self._walk_unit(unit):
                if id(node) not in seen:
                    seen.add(id(node))
                    nodes.append(node)
        return nodes

    def _walk_unit(self, unit):
        """A unit's nodes: the module's import-time code (function and method bodies
        excluded, if __name__ == "__main__" blocks excluded); a class or function whole
        (nested functions and lambdas are its own code); never a Triton kernel's body."""
        if unit is self.tree:
            stack = [s for s in self.tree.body if not is_main_guard(s)]
            while stack:
                node = stack.pop()
                yield node
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    stack.extend(self._header_children(node))
                elif isinstance(node, ast.ClassDef):
                    stack.extend(self._header_children(node))
                    stack.extend(node.body)
                else:
                    stack.extend(ast.iter_child_nodes(node))
            return
        stack = [unit]
        while stack:
            node = stack.pop()
            if isinstance(node, ast.FunctionDef) and self._is_kernel(node):
                yield from (n for d in node.decorator_list for n in ast.walk(d))
                continue
            yield node
            stack.extend(ast.iter_child_nodes(node))

    def _is_kernel(self, node):
        return self.parents.get(id(node)) is self.tree and node.name in self.jit_functions

    def _reachable(self, roots):
        order, seen, queue = [], set(), list(roots)
        while queue:
            unit = queue.pop()
            if id(unit) in seen:
                continue
            seen.add(id(unit))
            order.append(unit)
            for node in self._walk_unit(unit):
                if isinstance(node, (ast.Name, ast.Attribute, ast.Subscript, ast.Call)) and \
                        not isinstance(getattr(node, "ctx", ast.Load()), ast.Store):
                    for value in self.values(node):
                        queue.extend(self._units_of(value, node))
        return order

    def _units_of(self, value, node):
        if isinstance(value, Func):
            if isinstance(value.node, ast.FunctionDef) and self._is_kernel(value.node):
                return []
            return [value.node]
        if isinstance(value, Cls):
            return [value.node]
        if isinstance(value, Inst):
            parent = self.parents.get(id(node))
            if isinstance(parent, ast.Call) and parent.func is node:
                return [m for m in (self.method(value.node, n) for n in _IMPLICIT_METHODS)
                        if m is not None]
        return []
