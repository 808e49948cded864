"""What the L1 checker knows about a candidate module, read from its AST alone: import
aliases, module-level definitions and strings, the ModelNew class, the code reachable from
ModelNew.forward, Triton kernels and their launches, native-library handles."""

import ast

MODEL_NEW = "ModelNew"

TRITON_JIT = "triton.jit"
CPP_LOADERS = ("kforge_cpp.load",)
CUDA_LOADERS = ("torch.utils.cpp_extension.load_inline", "torch.utils.cpp_extension.load")


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


class ModuleFacts:
    def __init__(self, tree):
        self.tree = tree
        self.aliases = {}    # local name -> canonical dotted path, from imports anywhere
        self.functions = {}  # module-level function name -> FunctionDef
        self.classes = {}    # module-level class name -> ClassDef
        self.strings = {}    # module-level name -> str constant value
        self._collect()
        self.model_new = self.classes.get(MODEL_NEW)
        self.jit_functions = {name for name, fn in self.functions.items()
                              if any(self._decorator_is_jit(d) for d in fn.decorator_list)}
        self.cpp_handles = self._handles(CPP_LOADERS)
        self.cuda_handles = self._handles(CUDA_LOADERS)
        self.forward_functions = self._reachable_from_forward()

    # ---- names ----

    def _collect(self):
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.aliases[alias.asname] = alias.name
                    else:  # `import a.b` binds `a`
                        root = alias.name.split(".")[0]
                        self.aliases[root] = root
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    self.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        for stmt in self.tree.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions[stmt.name] = stmt
            elif isinstance(stmt, ast.ClassDef):
                self.classes[stmt.name] = stmt
            elif isinstance(stmt, ast.Assign) and string_value(stmt.value) is not None:
                for target in stmt.targets:
                    if isinstance(target, ast.Name):
                        self.strings[target.id] = string_value(stmt.value)

    def canonical(self, node):
        """The dotted name `node` refers to, import aliases resolved ('F.relu' ->
        'torch.nn.functional.relu'); getattr(x, 'name') counts as x.name."""
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id == "getattr" and len(node.args) >= 2
                and string_value(node.args[1]) is not None):
            base = self.canonical(node.args[0])
            return f"{base}.{string_value(node.args[1])}" if base else None
        name = dotted(node)
        if name is None:
            return None
        root, _, rest = name.partition(".")
        if root in self.aliases:
            return self.aliases[root] + ("." + rest if rest else "")
        return name

    def module_rooted(self, node):
        """Whether `node` is an attribute chain on an imported module (torch.x, np.y)."""
        while isinstance(node, ast.Attribute):
            node = node.value
        return isinstance(node, ast.Name) and node.id in self.aliases

    def _decorator_is_jit(self, decorator):
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        return self.canonical(target) == TRITON_JIT

    # ---- classes and reachability ----

    def method(self, cls, name, seen=None):
        """`name` defined in `cls` or in one of its module-level base classes."""
        seen = seen or set()
        if cls is None or cls.name in seen:
            return None
        seen.add(cls.name)
        for stmt in cls.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == name:
                return stmt
        for base in cls.bases:
            found = self.method(self.classes.get(dotted(base) or ""), name, seen)
            if found is not None:
                return found
        return None

    def methods(self, cls, seen=None):
        """Every method of `cls` and its module-level bases."""
        seen = seen or set()
        if cls is None or cls.name in seen:
            return []
        seen.add(cls.name)
        own = [s for s in cls.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]
        for base in cls.bases:
            own += self.methods(self.classes.get(dotted(base) or ""), seen)
        return own

    def _reachable_from_forward(self):
        """ModelNew.forward plus what it calls, transitively: module-level functions by
        name, self.<method>, and <Class>.apply (a torch.autograd.Function's forward).
        Triton kernels are not followed: their bodies are device code."""
        start = self.method(self.model_new, "forward")
        if start is None:
            return []
        reached, queue = [], [start]
        while queue:
            fn = queue.pop()
            if any(fn is r for r in reached):
                continue
            reached.append(fn)
            for node in ast.walk(fn):
                if isinstance(node, ast.Call):
                    queue.extend(self._callees(node.func))
        return reached

    def _callees(self, func):
        if isinstance(func, ast.Name):
            fn = self.functions.get(func.id)
            return [fn] if fn is not None and func.id not in self.jit_functions else []
        name = dotted(func)
        if name is None:
            return []
        head, _, attr = name.rpartition(".")
        if head == "self":
            found = self.method(self.model_new, attr)
            return [found] if found is not None else []
        if attr == "apply" and head in self.classes:
            found = self.method(self.classes[head], "forward")
            return [found] if found is not None else []
        return []

    def forward_nodes(self):
        for fn in self.forward_functions:
            yield from ast.walk(fn)

    def candidate_nodes(self):
        """ModelNew's whole class plus the code forward reaches."""
        seen = set()
        roots = ([self.model_new] if self.model_new else []) + self.forward_functions
        for root in roots:
            for node in ast.walk(root):
                if id(node) not in seen:
                    seen.add(id(node))
                    yield node

    # ---- native code ----

    def _handles(self, loaders):
        """Dotted names bound to the result of a loader call ('lib', 'self.lib'), or to
        another such name (`self.ext = ext` after `ext = load_inline(...)`)."""
        assigns = [node for node in ast.walk(self.tree) if isinstance(node, ast.Assign)]
        handles = set()
        while True:
            found = set(handles)
            for node in assigns:
                value = node.value
                if (isinstance(value, ast.Call) and self.canonical(value.func) in loaders) \
                        or dotted(value) in handles:
                    found.update(dotted(t) for t in node.targets if dotted(t))
            if found == handles:
                return handles
            handles = found

    def calls_into(self, handles, loaders):
        """Calls in forward's code to a function of a loaded native library."""
        for node in self.forward_nodes():
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                receiver = node.func.value
                if dotted(receiver) in handles:
                    yield node
                elif isinstance(receiver, ast.Call) and self.canonical(receiver.func) in loaders:
                    yield node

    def loader_calls(self, loaders):
        return [node for node in ast.walk(self.tree)
                if isinstance(node, ast.Call) and self.canonical(node.func) in loaders]

    def triton_launches(self):
        """kernel[grid](...) calls in forward's code."""
        for node in self.forward_nodes():
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript)
                    and dotted(node.func.value) in self.jit_functions):
                yield node

    def resolve_strings(self, node):
        """The text of a source argument: a literal, a module-level string name, or a
        list of those (joined by newlines); None when it cannot be known statically."""
        if node is None:
            return None
        if string_value(node) is not None:
            return string_value(node)
        if isinstance(node, ast.Name):
            return self.strings.get(node.id)
        if isinstance(node, (ast.List, ast.Tuple)):
            parts = [self.resolve_strings(elt) for elt in node.elts]
            return None if None in parts else "\n".join(parts)
        return None


def init_parameters(facts, cls):
    """(positional parameter names, names with defaults, has *args) of cls.__init__, or
    ([], [], False) when no __init__ is defined along its module-level bases."""
    init = facts.method(cls, "__init__")
    if init is None:
        return [], [], False
    args = init.args
    positional = [a.arg for a in args.posonlyargs + args.args][1:]  # drop self
    with_default = positional[len(positional) - len(args.defaults):] if args.defaults else []
    return positional, with_default, args.vararg is not None
